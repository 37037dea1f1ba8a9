package entry

// Refusals: the redirect to the waiting room (or 401 JSON), and 503 while
// no token can be checked.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// RoomURL returns where r is sent to wait: the waiting room with the event
// and r's absolute URL as returnTo.
func (g *Guard) RoomURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if g.trustProto {
		p, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
		if p = strings.ToLower(strings.TrimSpace(p)); p == "http" || p == "https" {
			scheme = p
		}
	}
	back := scheme + "://" + r.Host + r.URL.RequestURI()
	return g.room + "event=" + url.QueryEscape(g.eventID) + "&returnTo=" + url.QueryEscape(back)
}

// entryRequired is the 401 body for clients that asked for JSON.
type entryRequired struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	WaitingRoom string `json:"waitingRoom"`
}

// toLine sends r to the waiting room, clearing the cookie when it held an
// invalid token: a redirect, or 401 JSON to a client that asked for JSON.
func (g *Guard) toLine(w http.ResponseWriter, r *http.Request, clear bool) {
	room := g.RoomURL(r)
	h := w.Header()
	if clear {
		h.Add("Set-Cookie", g.clearCookieV)
	}
	h.Set("Cache-Control", "no-store")
	if wantsJSON(r) {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(entryRequired{
			Code: "entry_required", Message: "this page needs a turn in the waiting room", WaitingRoom: room,
		})
		return
	}
	h.Set("Location", room)
	w.WriteHeader(http.StatusFound)
}

// unavailable answers 503 while no token can be checked: sending visitors
// to the waiting room would bring them straight back.
func (g *Guard) unavailable(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", "5")
	msg := "entry cannot be checked right now; try again in a moment"
	if wantsJSON(r) {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]string{"code": "entry_unavailable", "message": msg})
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = fmt.Fprintln(w, msg)
}

// wantsJSON reports whether r's Accept header asks for JSON and not for a
// page: API calls get 401 instead of a redirect they could not follow.
func wantsJSON(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/json") && !strings.Contains(a, "text/html")
}

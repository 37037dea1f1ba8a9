package guard

// Forwarding to the origin: the admitted user named to it, the guard's
// cookie kept from it, its answers timed and counted, its failures
// answered 502 or 504.

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/waitq/waitq/pkg/entry"
)

// forwardAdmitted forwards a request the guard passed, naming its user to
// the origin and keeping the token from it.
func (g *Proxy) forwardAdmitted(w http.ResponseWriter, r *http.Request) {
	dropCookie(r.Header, g.guard.CookieName())
	g.forward(w, r, true)
}

// setIdentity names the admitted user of in (none on a bypassed path) to
// the origin in h, with the token itself when forward is set, replacing
// whatever the client sent under those names, in any spelling.
// It runs in the proxy's Rewrite, after the hop-by-hop headers went: a
// client's "Connection: X-Waitq-User-Id" cannot make them vanish.
func setIdentity(h http.Header, in *http.Request, forward bool) {
	for name := range h {
		if identityHeader(name) {
			delete(h, name)
		}
	}
	if t, raw, ok := entry.TokenFromContext(in.Context()); ok {
		h.Set(UserHeader, t.UserID)
		h.Set(ExpiresHeader, strconv.FormatInt(t.Expires, 10))
		if forward {
			h.Set(TokenHeader, raw)
		}
	}
}

// identityHeader reports whether name is a spelling of a header the guard
// sets for the origin: letter case ignored, and "_" taken for "-", as CGI,
// WSGI and PHP origins read both (X_Waitq_User_Id is their
// HTTP_X_WAITQ_USER_ID too).
func identityHeader(name string) bool {
	for _, h := range [...]string{UserHeader, ExpiresHeader, TokenHeader} {
		if len(name) == len(h) && strings.EqualFold(strings.ReplaceAll(name, "_", "-"), h) {
			return true
		}
	}
	return false
}

// dropCookie removes the cookie name from the Cookie headers of h, keeping
// the others as they came.
func dropCookie(h http.Header, name string) {
	lines := h.Values("Cookie")
	if len(lines) == 0 {
		return
	}
	var kept []string
	for _, line := range lines {
		for part := range strings.SplitSeq(line, ";") {
			part = strings.TrimSpace(part)
			if k, _, _ := strings.Cut(part, "="); k != name && part != "" {
				kept = append(kept, part)
			}
		}
	}
	h.Del("Cookie")
	if len(kept) > 0 {
		h.Set("Cookie", strings.Join(kept, "; "))
	}
}

// forward proxies r to the origin, timing the answer and counting its class.
// The answers on guarded paths also go into the health figures, timed to
// their response headers: the origin's own latency, not the visitor's
// download.
func (g *Proxy) forward(w http.ResponseWriter, r *http.Request, guarded bool) {
	rec := &statusRecorder{ResponseWriter: w}
	start := time.Now()
	g.proxy.ServeHTTP(rec, r)
	g.m.origin(rec, time.Since(start))
	// Not counted: a visitor who left before the origin answered, and an
	// upgrade (a WebSocket tunnel lasts as long as the connection).
	if guarded && !rec.canceled && rec.status != 0 {
		g.health.Observe(rec.answered, rec.answered.Sub(start), rec.failed || rec.status >= 500)
	}
}

// originFailed answers 504 when the origin did not send its response
// headers within the origin timeout, 502 when it did not answer at all
// (refused connection, reset, a bad answer).
func (g *Proxy) originFailed(w http.ResponseWriter, r *http.Request, err error) {
	rec, _ := w.(*statusRecorder)
	if rec != nil {
		rec.failed = true
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		// The visitor left; nobody reads the answer.
		if rec != nil {
			rec.canceled = true
		}
	case errors.As(err, &ne) && ne.Timeout():
		g.log.Warn("origin did not answer in time", "event", g.eventID, "path", r.URL.Path, "err", err)
		if rec != nil {
			rec.timedOut = true
		}
		http.Error(w, "the site is taking too long to answer; try again in a moment", http.StatusGatewayTimeout)
		return
	default:
		g.log.Warn("origin did not answer", "event", g.eventID, "path", r.URL.Path, "err", err)
	}
	http.Error(w, "the site is not answering; try again in a moment", http.StatusBadGateway)
}

// statusRecorder keeps the status the origin's answer was written with,
// and when.
type statusRecorder struct {
	http.ResponseWriter
	status   int
	answered time.Time // when status was written
	failed   bool      // the origin did not answer; the guard wrote 502 or 504
	timedOut bool      // … within the origin timeout (504)
	canceled bool      // the visitor left before the origin answered
}

// WriteHeader implements http.ResponseWriter.
func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status, s.answered = code, time.Now()
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status, s.answered = http.StatusOK, time.Now()
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController (the proxy's flushes) reach the
// server's writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

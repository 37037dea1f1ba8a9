package demoshop

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/waitq/waitq/pkg/entry"
)

// The seated ticket's seat map: with Config.GatewayURL and EventID, the
// seated ticket's page shows the seats, the taken ones greyed; a buyer
// chooses one (POST /seats/hold: held for them through ws-gateway, with
// the entry token the guard forwards in TokenHeader), then places the
// order (POST /order with the seat: the hold confirmed with the shop's
// own credential, Config.ShopToken, the seat sold) or cancels (POST
// /seats/release). pkg/entry's Holds makes the calls.

// TokenHeader is the header waitq-guard hands the entry token in, with
// WAITQ_FORWARD_TOKEN.
const TokenHeader = "X-Waitq-Token"

// SeatedProduct is the product sold by seat.
const SeatedProduct = 2

// Seats are the seated ticket's seats, by row.
var Seats = [][]string{
	{"A1", "A2", "A3", "A4", "A5", "A6"},
	{"B1", "B2", "B3", "B4", "B5", "B6"},
}

// seat is one seat as the map shows it.
type seat struct {
	ID    string
	Taken bool // held or sold: greyed, not to choose
	Mine  bool // held for this buyer (the page after their hold)
}

// seatMap is the seat map's part of a page.
type seatMap struct {
	Rows    [][]seat
	Held    string // the seat held for the buyer, as their hold's redirect named it (the gateway decides what they may order)
	Until   string // the end of their stay, hh:mm:ss
	Message string
}

var _ = template.Must(pages.New("seats").Parse(`
<section id="seats">
{{- with .Message}}<p class="notice">{{.}}</p>{{end}}
{{- if .Held}}
<p id="held">Seat {{.Held}} is held for you{{with .Until}} until {{.}}{{end}}.</p>
<form method="post" action="/order"><input type="hidden" name="product" value="2"><input type="hidden" name="seat" value="{{.Held}}"><button id="place">Place order</button></form>
<form method="post" action="/seats/release"><input type="hidden" name="seat" value="{{.Held}}"><button id="cancel">Cancel</button></form>
{{- end}}
<form method="post" action="/seats/hold" class="seatmap">
{{- range .Rows}}<div class="row">{{range .}}<button name="seat" value="{{.ID}}" class="seat{{if .Mine}} mine{{else if .Taken}} taken{{end}}"{{if .Taken}} disabled{{end}}>{{.ID}}</button>{{end}}</div>{{end}}
</form>
</section>`))

const seatsCSS = `.seatmap .row{display:flex;gap:.3rem;margin:.3rem 0}.seat{min-width:3rem}
.seat.taken{background:#ccc;color:#888}.seat.mine{background:#7c7;color:#000}.notice{color:#a50}
`

// messages are the notices of ?msg= after a seat call.
var messages = map[string]string{
	"taken":    "That seat was just taken: choose another.",
	"limit":    "You already hold a seat: place the order or cancel it first.",
	"sold":     "That seat is sold.",
	"released": "Your seat is free again.",
	"ended":    "Your time in the shop ended: the seat is no longer held.",
	"notheld":  "That seat is not held for you: choose one.",
	"error":    "The seat could not be held; try again.",
}

// holds returns the shop's seat-hold client, nil without one.
func (s *Shop) holds() *entry.Holds {
	if s.cfg.GatewayURL == "" {
		return nil
	}
	return &entry.Holds{GatewayURL: s.cfg.GatewayURL, EventID: s.cfg.EventID, ShopToken: s.cfg.ShopToken, Client: s.client}
}

// seatMap reads the seats' states for the page of r; nil without a
// gateway.
func (s *Shop) seatMap(r *http.Request) *seatMap {
	h := s.holds()
	if h == nil {
		return nil
	}
	m := &seatMap{Held: r.FormValue("held"), Message: messages[r.FormValue("msg")]}
	items, err := h.Items(r.Context())
	if err != nil {
		m.Message = "The seat map is not available right now."
	}
	if m.Held != "" && items[m.Held] != "held" {
		m.Held = ""
	}
	if until := r.FormValue("until"); m.Held != "" && until != "" {
		if t, err := time.Parse(time.RFC3339, until); err == nil {
			m.Until = t.Format(time.TimeOnly)
		}
	}
	for _, row := range Seats {
		var out []seat
		for _, id := range row {
			out = append(out, seat{ID: id, Taken: items[id] != "", Mine: id == m.Held})
		}
		m.Rows = append(m.Rows, out)
	}
	return m
}

// seatRoutes adds the seat calls.
func (s *Shop) seatRoutes(page func(string, http.HandlerFunc)) {
	page("POST /seats/hold", func(w http.ResponseWriter, r *http.Request) {
		h, id := s.holds(), r.FormValue("seat")
		if h == nil {
			render(w, r, http.StatusNotFound, view{Page: "missing", Title: "Not found"})
			return
		}
		hold, _, err := h.Hold(r.Context(), r.Header.Get(TokenHeader), id)
		q := url.Values{}
		switch {
		case err == nil:
			q.Set("held", hold.Item)
			q.Set("until", time.UnixMilli(hold.ExpiresAt).Format(time.RFC3339))
		case errors.Is(err, entry.ErrItemHeld):
			q.Set("msg", "taken")
		case errors.Is(err, entry.ErrHoldLimit):
			q.Set("msg", "limit")
		case errors.Is(err, entry.ErrItemSold):
			q.Set("msg", "sold")
		case errors.Is(err, entry.ErrTokenRefused):
			q.Set("msg", "ended")
		default:
			q.Set("msg", "error")
		}
		http.Redirect(w, r, "/product/2?"+q.Encode(), http.StatusSeeOther)
	})
	page("POST /seats/release", func(w http.ResponseWriter, r *http.Request) {
		h := s.holds()
		if h == nil {
			render(w, r, http.StatusNotFound, view{Page: "missing", Title: "Not found"})
			return
		}
		msg := "released"
		if err := h.Release(r.Context(), r.Header.Get(TokenHeader), r.FormValue("seat")); err != nil {
			msg = "error"
		}
		http.Redirect(w, r, "/product/2?msg="+msg, http.StatusSeeOther)
	})
}

// confirmSeat buys the seat of an order, when it names one; false when the
// order cannot be placed (the answer was written).
func (s *Shop) confirmSeat(w http.ResponseWriter, r *http.Request) bool {
	h, id := s.holds(), r.FormValue("seat")
	if h == nil || id == "" {
		return true
	}
	if _, err := h.Confirm(r.Context(), r.Header.Get(TokenHeader), id); err != nil {
		msg := "error"
		switch {
		case errors.Is(err, entry.ErrTokenRefused):
			msg = "ended"
		case errors.Is(err, entry.ErrNotHolder):
			msg = "notheld"
		}
		http.Redirect(w, r, "/product/2?msg="+msg, http.StatusSeeOther)
		return false
	}
	return true
}

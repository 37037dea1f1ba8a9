//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/chaos"
)

// The arrival window under faults: a fourth event, whose stay is long
// enough for an arrival window, behind a waitq-guard of its own that
// reports each visitor's arrival with the event's report token, through
// the balancer, which writes every report and its answer into the
// history. A share of its admitted clients never come to the shop; their
// slots must come back before the stay ends, and the slots of those who
// came must not (chaos, check_arrivals.go). The sampler reads the event's
// released list: a client's release or a no-show's free.

const (
	// arrivalHoldMs and arrivalMs: the arrival event's stay and window
	// (arrivalSeconds is at least 10 and below the stay).
	arrivalHoldMs = 20000
	arrivalMs     = 10000
	// noShowShare of its admitted clients never come to the shop.
	noShowShare = 0.2
	// orderShare of those who come order on the done path within seconds
	// (releasing the slot); the others stay past the window.
	orderShare = 0.4
)

// arrivalAdmission is the admission an entry token of the arrival event
// names, for the balancer to tell whose arrival a report is.
type arrivalAdmission struct {
	user    string
	expires int64
}

// startArrivalShop runs the arrival event's origin and its guard (its own
// proxy), which reports arrivals with the event's report token.
func (c *campaign) startArrivalShop(reportToken string) *shop {
	origin := c.origin(c.arrive)
	s := newShop(c.arrive)
	args := append([]string{"-origin-url", origin.URL, "-health-token", reportToken}, guardArgs(c.arrive, c.balancer)...)
	s.guard = c.runGuard("waitq-guard (arrivals)", args...)
	s.fronts = []front{{"guard", s.guard}}
	return s
}

// comeOrNot is an admitted client of the arrival event: noShowShare never
// come (no-shows); the others enter the shop at once with the token (the
// guard reports the arrival, answers 302 and sets its cookie; after any
// other answer the visitor has no cookie and goes no further) and look at
// a page, then orderShare of them
// order within seconds (the done path releases the slot) and the rest
// stay in the shop past the window, coming back once before the stay ends.
func (u *user) comeOrNot(ctx context.Context, a gateway.AdmittedFrame) {
	c := u.c
	if c.rng.Float64() < noShowShare {
		return
	}
	s := c.arrivals
	f := s.fronts[0]
	c.tokens.Store(a.EntryToken, arrivalAdmission{u.id, a.ExpiresAt})
	if o := c.guardRequest(ctx, s, f, "arrival enter", u.id, http.MethodGet, "/shop/item/1", a.EntryToken, true, nil); o != "302" {
		return // no cookie: a browser would be sent to the line
	}
	c.guardRequest(ctx, s, f, "arrival visit", u.id, http.MethodGet, "/shop/item/2", a.EntryToken, false, nil)
	if c.rng.Float64() < orderShare {
		clock.Sleep(ctx, c.rng.Between(time.Second, 4*time.Second))
		at := time.Now()
		o := c.guardRequest(ctx, s, f, "arrival done", u.id, http.MethodPost, "/order", a.EntryToken, false, nil)
		c.h.AddRelease(chaos.Release{Event: u.event, User: u.id, At: at, Via: "guard", Outcome: o, ExpiresAt: a.ExpiresAt})
		return
	}
	closes := time.UnixMilli(a.ExpiresAt - arrivalHoldMs + arrivalMs)
	clock.Sleep(ctx, time.Until(closes)+c.rng.Between(time.Second, 5*time.Second))
	if ctx.Err() == nil {
		c.guardRequest(ctx, s, f, "arrival stay", u.id, http.MethodGet, "/shop/item/3", a.EntryToken, false, nil)
	}
}

// reportArrival sends one of the guard's arrival reports through send and
// writes it into the history with the gateway's answer (its status, or
// none) and the admission its token names.
func (c *campaign) reportArrival(r *http.Request, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	var req struct{ Token string }
	_ = json.Unmarshal(body, &req)
	v, _ := c.tokens.Load(req.Token)
	a, _ := v.(arrivalAdmission)
	rec := chaos.ArrivalReport{Event: path.Base(path.Dir(r.URL.Path)), User: a.user, ExpiresAt: a.expires, Sent: time.Now(), Outcome: chaos.NoAnswer}
	resp, err := send(out)
	if err == nil {
		rec.Outcome = chaos.Outcome(strconv.Itoa(resp.StatusCode))
	}
	c.h.AddArrival(rec)
	return resp, err
}

// sampleFreed reads the arrival event's released list (member
// "<hold end>|<user>") and writes each admission on it into the history
// the first time it is seen.
func (c *campaign) sampleFreed(ctx context.Context) {
	members, err := c.rdb.ZRange(ctx, redisstore.ReleasedKey(c.arrive), 0, -1).Result()
	if err != nil {
		return
	}
	now := time.Now()
	for _, m := range members {
		if _, seen := c.freedSeen.LoadOrStore(m, true); seen {
			continue
		}
		end, user, ok := strings.Cut(m, "|")
		exp, err := strconv.ParseInt(end, 10, 64)
		if !ok || err != nil {
			c.t.Errorf("a member of %s's released list: %q", c.arrive, m)
			continue
		}
		c.h.AddFreed(chaos.Freed{Event: c.arrive, User: user, ExpiresAt: exp, At: now})
	}
}

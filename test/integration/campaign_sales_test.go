//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/chaos"
	"github.com/waitq/waitq/pkg/entry"
)

// The campaign's seat holds (api.md): some of the main event's admitted
// users are buyers racing for a few seats through the gateways; the shop
// (the test itself, with the event's shop token) confirms some of their
// holds, some buyers try to buy alone with a forged credential, and some
// give their hold back. Every call goes into the history; the checker
// proves no item sold twice and none sold without the shop.
const (
	// buyerShare of the main event's admitted users buy a seat.
	buyerShare = 0.3
	// seatsPerBlock seats are put on sale every blockEvery (seats
	// "b<block>-s<seat>"): few enough that the buyers of a block race for
	// them, and new ones through the whole run, faults and scenes included.
	seatsPerBlock = 20
	blockEvery    = 20 * time.Second
)

// eventTokens are an event's credentials, made at its creation: the
// shop's for its sales, and the report token its guard reports arrivals
// with.
type eventTokens struct{ ShopToken, ReportToken string }

// readTokens reads event's credentials from the admin API.
func (c *campaign) readTokens(event string) eventTokens {
	t := c.t
	req, _ := http.NewRequest(http.MethodGet, "http://"+c.addr(c.producers[0].alias)+"/v1/admin/events/"+event, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	var ev eventTokens
	decode200(t, "GET the admin view of "+event, resp, err, &ev)
	if ev.ShopToken == "" || ev.ReportToken == "" {
		t.Fatalf("event %s lacks a shop or a report token: %+v", event, ev)
	}
	return ev
}

// seatHolds is a client of the seat holds of the main event on a gateway
// that answers, drawn at random ("" for shopToken: a buyer's own call).
// ok is false when no gateway is reachable now.
func (c *campaign) seatHolds(shopToken string) (h *entry.Holds, ok bool) {
	first := c.rng.IntN(len(c.gateways))
	for i := range c.gateways {
		if a := c.addr(c.gateways[(first+i)%len(c.gateways)].alias); a != "" {
			return &entry.Holds{GatewayURL: "http://" + a, EventID: c.main, ShopToken: shopToken, Client: c.holdsClient}, true
		}
	}
	return nil, false
}

// holdOutcome names a seat holds call's answer: ok on success, the
// refusal's status and code, or no answer.
func holdOutcome(err error, ok chaos.Outcome) (o chaos.Outcome, answered bool) {
	var he *entry.HoldError
	switch {
	case err == nil:
		return ok, true
	case errors.As(err, &he):
		return chaos.Outcome(fmt.Sprintf("%d %s", he.Status, he.Code)), true
	}
	return chaos.NoAnswer, false
}

// retryable reports whether a seat holds call is worth repeating: no
// answer, or a 5xx (a 503 broker_unavailable leaves the change in Redis
// and asks for the repeat).
func retryable(o chaos.Outcome) bool { return o == chaos.NoAnswer || strings.HasPrefix(string(o), "5") }

// buy is a buyer's turn: hold a seat of the block on sale now, then (half
// of them) the shop confirms it, or (a tenth) the buyer tries to buy it
// alone with a forged credential, or gives it back, or keeps the hold to
// its slot's end. Nothing waits but the calls themselves.
func (u *user) buy(ctx context.Context, a string) {
	c := u.c
	item := u.holdSeat(ctx, a)
	if item == "" {
		return
	}
	switch p := c.rng.Float64(); {
	case p < 0.1:
		u.forge(ctx, a, item)
		if c.rng.Float64() < 0.5 {
			u.giveBack(ctx, a, item)
		}
	case p < 0.6:
		u.sell(ctx, a, item)
	case p < 0.8:
		u.giveBack(ctx, a, item)
	}
}

// holdSeat holds a random seat of the block on sale, trying another seat
// after item_held or item_sold and another gateway after no answer or a
// 5xx, four calls at most; it returns the seat held ("": none).
func (u *user) holdSeat(ctx context.Context, token string) string {
	c := u.c
	block := int(time.Since(c.salesStart) / blockEvery)
	item := ""
	for attempt := 0; attempt < 4 && ctx.Err() == nil; attempt++ {
		h, ok := c.seatHolds("")
		if !ok {
			clock.Sleep(ctx, 300*time.Millisecond)
			continue
		}
		if item == "" {
			item = fmt.Sprintf("b%02d-s%02d", block, c.rng.IntN(seatsPerBlock))
		}
		x := chaos.ItemHold{Event: c.main, User: u.id, Item: item, Op: "hold", Sent: time.Now()}
		hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, created, err := h.Hold(hctx, token, item)
		cancel()
		x.Outcome, _ = holdOutcome(err, "200")
		if err == nil && created {
			x.Outcome = "201"
		}
		c.h.AddItemHold(x)
		switch {
		case err == nil:
			return item
		case retryable(x.Outcome):
			clock.Sleep(ctx, 300*time.Millisecond)
		case errors.Is(err, entry.ErrItemHeld), errors.Is(err, entry.ErrItemSold):
			item = "" // another seat
		default: // the slot ended, the limit: no seat for this buyer
			return ""
		}
	}
	return ""
}

// sell is the shop confirming the buyer's hold with its shop token,
// repeated on another gateway after no answer or a 5xx (four tries at
// most), each try in the history with the buyer its 200 named.
func (u *user) sell(ctx context.Context, token, item string) {
	c := u.c
	for attempt := 0; attempt < 4 && ctx.Err() == nil; attempt++ {
		h, ok := c.seatHolds(c.shopToken)
		if !ok {
			clock.Sleep(ctx, 300*time.Millisecond)
			continue
		}
		if s := u.confirm(ctx, h, token, item, chaos.ViaShop); !retryable(s.Outcome) {
			return
		}
		clock.Sleep(ctx, 300*time.Millisecond)
	}
}

// forge is the buyer confirming their own hold without the shop: no
// credential, their entry token as the bearer, or a made-up shop token.
// Each must be refused (401) and sell nothing.
func (u *user) forge(ctx context.Context, token, item string) {
	c := u.c
	h, ok := c.seatHolds("")
	if !ok {
		return
	}
	via := "forged: none"
	switch c.rng.IntN(3) {
	case 1:
		via, h.ShopToken = "forged: entry token", token
	case 2:
		via, h.ShopToken = "forged: made-up", fmt.Sprintf("made-up-shop-token-%s-%024d", u.id, c.rng.IntN(1<<30))
	}
	u.confirm(ctx, h, token, item, via)
}

// confirm sends one confirm of the buyer's hold of item through h (via
// says with which credential) and writes it to the history with its
// answer and the buyer a 200 named.
func (u *user) confirm(ctx context.Context, h *entry.Holds, token, item, via string) chaos.Sale {
	s := chaos.Sale{Event: u.c.main, User: u.id, Item: item, Via: via, Sent: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	sale, err := h.Confirm(cctx, token, item)
	cancel()
	var answered bool
	if s.Outcome, answered = holdOutcome(err, "200"); answered {
		s.Answered = time.Now()
	}
	s.SoldTo = sale.UserID
	u.c.h.AddSale(s)
	return s
}

// giveBack gives the buyer's hold back (DELETE with the entry token), once.
func (u *user) giveBack(ctx context.Context, token, item string) {
	c := u.c
	h, ok := c.seatHolds("")
	if !ok {
		return
	}
	x := chaos.ItemHold{Event: c.main, User: u.id, Item: item, Op: "give-back", Sent: time.Now()}
	gctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	err := h.Release(gctx, token, item)
	cancel()
	x.Outcome, _ = holdOutcome(err, "204")
	c.h.AddItemHold(x)
}

// soldItems reads what Redis holds sold of event at the end: item → buyer.
func (c *campaign) soldItems(ctx context.Context, event string) (map[string]string, error) {
	return c.rdb.HGetAll(ctx, redisstore.SoldKey(event)).Result()
}

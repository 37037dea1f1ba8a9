package producer_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/draw"
)

// chainDrop is a chain drop on a test clock, its pre-queue joined by fans.
type chainDrop struct {
	e       *apiEnv
	clock   *atomic.Int64
	ev      string
	opensAt int64
	tickets map[string]string // fan -> ticket
}

func startChainDrop(t *testing.T, fans int, source string) *chainDrop {
	t.Helper()
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	d := &chainDrop{clock: &atomic.Int64{}, ev: testenv.EventID(t), tickets: map[string]string{}}
	t0 := time.Now().Truncate(time.Second)
	d.clock.Store(t0.UnixMilli())
	d.e = startAPIWith(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken}, func(deps *producer.Deps) {
		deps.Now = func() time.Time { return time.UnixMilli(d.clock.Load()) }
	})
	d.opensAt = t0.Add(time.Hour).UnixMilli()
	r := d.e.putEvent(t, d.ev, fmt.Sprintf(`{"capacity":100,"opensAt":%d,"prequeueSeconds":600,"draw":{"publicSource":%s}}`, d.opensAt, source))
	if r.status != http.StatusCreated {
		t.Fatalf("schedule: %d %s", r.status, r.body)
	}
	d.clock.Store(d.opensAt - 300_000)
	for i := range fans {
		u := fmt.Sprintf("fan%02d", i)
		r := d.e.do(t, http.MethodPost, "/v1/events/"+d.ev+"/queue", user(u), nil)
		var j struct{ Ticket string }
		if r.status != http.StatusAccepted || json.Unmarshal(r.body, &j) != nil {
			t.Fatalf("pre-queue join: %d %s", r.status, r.body)
		}
		d.tickets[u] = j.Ticket
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		n := len(sys.Waiting(d.ev))
		return n == fans, fmt.Sprintf("%d in the pre-queue", n)
	})
	return d
}

func (d *chainDrop) publicValue(t *testing.T, ev, body string) reply {
	t.Helper()
	return d.e.do(t, http.MethodPut, "/v1/admin/events/"+ev+"/draw/public-value", admin("Content-Type", "application/json"), strings.NewReader(body))
}

func (d *chainDrop) public(t *testing.T) producer.PublicEvent {
	t.Helper()
	var pe producer.PublicEvent
	if r := d.e.do(t, http.MethodGet, "/v1/events/"+d.ev, nil, nil); json.Unmarshal(r.body, &pe) != nil || pe.Draw == nil {
		t.Fatalf("public event: %d %s", r.status, r.body)
	}
	return pe
}

// TestChainDrawOverHTTP: the source is public and fixed once the pre-queue
// started; at the opening nobody is drawn and no seed is shown until the
// entries froze; then the root is published with the seed; the public
// value makes the draw, which verifies, and every fan's receipt verifies.
func TestChainDrawOverHTTP(t *testing.T) {
	d := startChainDrop(t, 12, `{"name":"drand","round":4242}`)
	if r := d.e.putEvent(t, d.ev, `{"draw":{"publicSource":{"name":"drand","round":4243}}}`); r.status != http.StatusConflict || r.errorCode(t) != queue.CodeScheduleLocked {
		t.Fatalf("changing the source during the pre-queue: %d %s", r.status, r.body)
	}
	d.clock.Store(d.opensAt + 1000)
	if pe := d.public(t); pe.Draw.Kind != queue.DrawChain || pe.Draw.Seed != "" || pe.Draw.EntryRoot != "" || pe.Draw.PublicSource.Round != 4242 {
		t.Fatalf("a second after the opening: %+v", pe.Draw)
	}
	if r := d.publicValue(t, d.ev, `{"value":"00ff"}`); r.status != http.StatusConflict || r.errorCode(t) != queue.CodeDrawNotRevealed {
		t.Fatalf("a value before the freeze: %d %s", r.status, r.body)
	}
	d.clock.Store(d.opensAt + queue.DrawFreezeLagMs)
	pe := d.public(t)
	if pe.Draw.EntryRoot == "" || *pe.Draw.EntryCount != 12 || pe.Draw.Seed == "" || pe.Draw.DrawnAt != 0 {
		t.Fatalf("frozen: %+v", pe.Draw)
	}
	if r := d.e.do(t, http.MethodGet, "/v1/events/"+d.ev+"/draw", nil, nil); r.status != http.StatusConflict || r.errorCode(t) != queue.CodeDrawNotRevealed {
		t.Fatalf("the draw before its value: %d %s", r.status, r.body)
	}
	r := d.publicValue(t, d.ev, `{"value":"c0ffee00"}`)
	var c draw.Chain
	if r.status != http.StatusOK || json.Unmarshal(r.body, &c) != nil || c.EntryRoot != pe.Draw.EntryRoot || c.PublicValue != "c0ffee00" {
		t.Fatalf("the value: %d %s", r.status, r.body)
	}
	if err := c.Verify(); err != nil {
		t.Fatal(err)
	}
	for u, ticket := range d.tickets {
		r := d.e.do(t, http.MethodGet, "/v1/events/"+d.ev+"/draw/receipt?ticket="+ticket, nil, nil)
		var rc draw.Receipt
		if r.status != http.StatusOK || json.Unmarshal(r.body, &rc) != nil || rc.UserID != u {
			t.Fatalf("%s's receipt: %d %s", u, r.status, r.body)
		}
		if err := draw.VerifyReceipt(&c, &rc); err != nil {
			t.Fatalf("%s's receipt: %v", u, err)
		}
		if strings.Contains(string(d.e.do(t, http.MethodGet, "/v1/events/"+d.ev+"/draw", nil, nil).body), u) {
			t.Fatalf("the public draw names %s", u)
		}
	}
}

// TestPublicValueTwice: the first value stands; a second is 409
// public_value_set and changes nothing.
func TestPublicValueTwice(t *testing.T) {
	d := startChainDrop(t, 3, `{"name":"lotto","ref":"the 6/45 draw of the opening day"}`)
	d.clock.Store(d.opensAt + queue.DrawFreezeLagMs)
	if r := d.publicValue(t, d.ev, `{"value":"01"}`); r.status != http.StatusOK {
		t.Fatalf("the value: %d %s", r.status, r.body)
	}
	if r := d.publicValue(t, d.ev, `{"value":"02"}`); r.status != http.StatusConflict || r.errorCode(t) != queue.CodePublicValueSet {
		t.Fatalf("a second value: %d %s", r.status, r.body)
	}
	if pe := d.public(t); pe.Draw.PublicValue != "01" {
		t.Fatalf("the value after a second: %+v", pe.Draw)
	}
}

// TestPublicValueAfterPublication: past the deadline the draw is made
// without a value and published; a value then is 409 draw_published.
func TestPublicValueAfterPublication(t *testing.T) {
	d := startChainDrop(t, 3, `{"name":"drand","round":1,"deadlineSeconds":60}`)
	d.clock.Store(d.opensAt + 60_000)
	if r := d.publicValue(t, d.ev, `{"value":"01"}`); r.status != http.StatusConflict || r.errorCode(t) != queue.CodeDrawPublished {
		t.Fatalf("a value past the deadline: %d %s", r.status, r.body)
	}
	r := d.e.do(t, http.MethodGet, "/v1/events/"+d.ev+"/draw", nil, nil)
	var c draw.Chain
	if r.status != http.StatusOK || json.Unmarshal(r.body, &c) != nil || !c.PublicValueMissed || c.Verify() != nil {
		t.Fatalf("the draw made without a value: %d %s", r.status, r.body)
	}
	if cc := r.header.Get("Cache-Control"); cc != "public, max-age=300" {
		t.Errorf("a made draw's Cache-Control %q: caches in front should keep it", cc)
	}
}

// TestPublicValueMalformed: a bad body is 400 invalid_body and changes
// nothing.
func TestPublicValueMalformed(t *testing.T) {
	d := startChainDrop(t, 2, `{"name":"drand","round":9}`)
	d.clock.Store(d.opensAt + queue.DrawFreezeLagMs)
	for _, body := range []string{`{"value":"zz"}`, `{"value":""}`, `{"value":"abc"}`, `{}`, `{"value":"01","x":1}`, `not json`, `{"value":1}`,
		fmt.Sprintf(`{"value":"%s"}`, strings.Repeat("ab", draw.MaxPublicValueBytes+1))} {
		if r := d.publicValue(t, d.ev, body); r.status != http.StatusBadRequest || r.errorCode(t) != queue.CodeInvalidBody {
			t.Errorf("%.40s: %d %s", body, r.status, r.body)
		}
	}
	if pe := d.public(t); pe.Draw.DrawnAt != 0 {
		t.Fatalf("a bad value made the draw: %+v", pe.Draw)
	}
}

// TestPublicValueUnknownOrClassicEvent: 404 event_not_found for an unknown
// event, 409 not_chain_draw for a classic drop (its draw, its receipts
// too).
func TestPublicValueUnknownOrClassicEvent(t *testing.T) {
	d := startChainDrop(t, 0, `{"name":"drand","round":9}`)
	if r := d.publicValue(t, "no-such-event", `{"value":"01"}`); r.status != http.StatusNotFound || r.errorCode(t) != queue.CodeEventNotFound {
		t.Fatalf("unknown event: %d %s", r.status, r.body)
	}
	classic := d.ev + "-classic"
	if r := d.e.putEvent(t, classic, fmt.Sprintf(`{"capacity":5,"opensAt":%d}`, d.opensAt)); r.status != http.StatusCreated {
		t.Fatalf("classic drop: %d %s", r.status, r.body)
	}
	d.clock.Store(d.opensAt + queue.DrawFreezeLagMs)
	ticket := d.e.tickets.Sign(queue.Ticket{EventID: classic, UserID: "fan", JoinedAt: 1, Expires: d.clock.Load() + 60_000})
	for name, r := range map[string]reply{
		"value":   d.publicValue(t, classic, `{"value":"01"}`),
		"draw":    d.e.do(t, http.MethodGet, "/v1/events/"+classic+"/draw", nil, nil),
		"receipt": d.e.do(t, http.MethodGet, "/v1/events/"+classic+"/draw/receipt?ticket="+ticket, nil, nil),
	} {
		if r.status != http.StatusConflict || r.errorCode(t) != queue.CodeNotChainDraw {
			t.Errorf("%s of a classic drop: %d %s", name, r.status, r.body)
		}
	}
}

// TestReceiptNeedsTheVisitorsOwnTicket: another event's ticket, a forged
// one, an expired one or none is 401 invalid_ticket; a ticket of someone not among the
// entries is 404 not_in_draw.
func TestReceiptNeedsTheVisitorsOwnTicket(t *testing.T) {
	d := startChainDrop(t, 2, `{"name":"drand","round":9}`)
	d.clock.Store(d.opensAt + queue.DrawFreezeLagMs)
	if r := d.publicValue(t, d.ev, `{"value":"01"}`); r.status != http.StatusOK {
		t.Fatalf("the value: %d %s", r.status, r.body)
	}
	exp := d.clock.Load() + 60_000
	other := d.e.tickets.Sign(queue.Ticket{EventID: "other-event", UserID: "fan00", JoinedAt: 1, Expires: exp})
	stranger := d.e.tickets.Sign(queue.Ticket{EventID: d.ev, UserID: "stranger", JoinedAt: 1, Expires: exp})
	expired := d.e.tickets.Sign(queue.Ticket{EventID: d.ev, UserID: "fan00", JoinedAt: 1, Expires: d.clock.Load() - 1})
	for name, tc := range map[string]struct {
		ticket string
		status int
		code   queue.Code
	}{
		"another event's ticket": {other, http.StatusUnauthorized, queue.CodeInvalidTicket},
		"a forged ticket":        {d.tickets["fan00"][:len(d.tickets["fan00"])-2] + "xx", http.StatusUnauthorized, queue.CodeInvalidTicket},
		"an expired ticket":      {expired, http.StatusUnauthorized, queue.CodeInvalidTicket},
		"no ticket":              {"", http.StatusUnauthorized, queue.CodeInvalidTicket},
		"not an entrant":         {stranger, http.StatusNotFound, queue.CodeNotInDraw},
	} {
		r := d.e.do(t, http.MethodGet, "/v1/events/"+d.ev+"/draw/receipt?ticket="+tc.ticket, nil, nil)
		if r.status != tc.status || r.errorCode(t) != tc.code {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
}

// TestDrawSourceValidation: a source naming nothing, without a round or a
// ref, with a bad deadline, or without an opening is 400 invalid_config.
func TestDrawSourceValidation(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	ev := testenv.EventID(t)
	future := time.Now().Add(time.Hour).UnixMilli()
	for _, src := range []string{`{"name":""}`, `{"name":"drand"}`, `{"name":"drand","round":1,"deadlineSeconds":5}`, `{"name":"drand","round":1,"extra":1}`, `"drand"`} {
		body := fmt.Sprintf(`{"capacity":5,"opensAt":%d,"draw":{"publicSource":%s}}`, future, src)
		if r := e.putEvent(t, ev, body); r.status != http.StatusBadRequest || r.errorCode(t) != queue.CodeInvalidConfig {
			t.Errorf("%s: %d %s", src, r.status, r.body)
		}
	}
	if r := e.putEvent(t, ev, `{"capacity":5,"draw":{"publicSource":{"name":"drand","round":1}}}`); r.status != http.StatusBadRequest || r.errorCode(t) != queue.CodeInvalidConfig {
		t.Errorf("a source without an opening: %d %s", r.status, r.body)
	}
}

// TestDrawNumbersOverHTTP: before the draw the compact numbers are 409
// draw_not_revealed; once made, GET …/draw/numbers is the draw's numbers,
// ascending, 7 bytes each (what the page's check reads instead of the
// whole draw), cacheable as the draw; a classic drop's is 409
// not_chain_draw.
func TestDrawNumbersOverHTTP(t *testing.T) {
	d := startChainDrop(t, 9, `{"name":"drand","round":77}`)
	d.clock.Store(d.opensAt + queue.DrawFreezeLagMs)
	path := "/v1/events/" + d.ev + "/draw/numbers"
	if r := d.e.do(t, http.MethodGet, path, nil, nil); r.status != http.StatusConflict || r.errorCode(t) != queue.CodeDrawNotRevealed {
		t.Fatalf("the numbers before the draw: %d %s", r.status, r.body)
	}
	r := d.publicValue(t, d.ev, `{"value":"0a0b"}`)
	var c draw.Chain
	if r.status != http.StatusOK || json.Unmarshal(r.body, &c) != nil {
		t.Fatalf("the value: %d %s", r.status, r.body)
	}
	r = d.e.do(t, http.MethodGet, path, nil, nil)
	got, err := draw.ParseNumbers(r.body)
	if r.status != http.StatusOK || err != nil || len(r.body) != 9*draw.NumberBytes || string(r.body) != string(c.AppendNumbers(nil)) {
		t.Fatalf("the numbers: %d %x (%v)", r.status, r.body, err)
	}
	if ct, cc := r.header.Get("Content-Type"), r.header.Get("Cache-Control"); ct != "application/octet-stream" || cc != "public, max-age=300" {
		t.Errorf("Content-Type %q, Cache-Control %q", ct, cc)
	}
	for _, n := range c.Numbers {
		if !slices.Contains(got, n) {
			t.Fatalf("number %d of the draw is not among the compact ones", n)
		}
	}
	classic := d.ev + "-classic"
	if r := d.e.putEvent(t, classic, fmt.Sprintf(`{"capacity":5,"opensAt":%d}`, d.opensAt+3_600_000)); r.status != http.StatusCreated {
		t.Fatalf("classic drop: %d %s", r.status, r.body)
	}
	if r := d.e.do(t, http.MethodGet, "/v1/events/"+classic+"/draw/numbers", nil, nil); r.status != http.StatusConflict || r.errorCode(t) != queue.CodeNotChainDraw {
		t.Fatalf("a classic drop's numbers: %d %s", r.status, r.body)
	}
	if r := d.e.do(t, http.MethodGet, "/v1/events/"+d.ev+"-made-up/draw/numbers", nil, nil); r.status != http.StatusNotFound || r.errorCode(t) != queue.CodeEventNotFound {
		t.Fatalf("a made-up event's numbers: %d %s", r.status, r.body)
	}
}

//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/testkit/chaos"
	"github.com/waitq/waitq/internal/testkit/testclient"
	"github.com/waitq/waitq/pkg/entry"
)

// maxInFlight bounds the users followed at once (each holds a socket).
const maxInFlight = 4000

// sseShare is the share of users that follow the line over server-sent
// events rather than a WebSocket.
const sseShare = 0.3

// load starts a user every 1/rate s until loadCtx ends; each is followed
// until done or until drainCtx ends. A quarter of them join the drop, an
// eighth the arrival event.
func (c *campaign) load(loadCtx, drainCtx context.Context, rate float64, users *sync.WaitGroup) {
	every := time.Duration(float64(time.Second) / rate)
	tick := time.NewTicker(every)
	defer tick.Stop()
	active := make(chan struct{}, maxInFlight)
	for i := 0; ; i++ {
		select {
		case <-loadCtx.Done():
			return
		case <-tick.C:
		}
		select {
		case active <- struct{}{}:
		default:
			c.skippedUsers.Add(1)
			continue
		}
		ev := c.main
		switch {
		case i%4 == 3:
			ev = c.drop
		case i%8 == 5:
			ev = c.arrive
		}
		u := &user{c: c, event: ev, id: fmt.Sprintf("u%06d", i), visit: fmt.Sprintf("v%06d", i), transport: transportWS}
		if c.rng.Float64() < sseShare {
			u.transport = transportSSE
		}
		c.users.Add(1)
		users.Go(func() {
			defer func() { <-active }()
			defer c.states.Delete(u.id)
			c.states.Store(u.id, gateway.UserState("joining"))
			u.run(drainCtx)
		})
	}
}

// user is one visitor: joins, follows the line over a socket (reconnecting
// to another gateway when it dies or falls silent), and when admitted
// releases at once, after a while, or never. Some leave, some reconnect on
// their own, some click twice.
type user struct {
	c         *campaign
	event, id string
	visit     string // the Idempotency-Key of every try of its one visit, as the page keeps one
	transport string // transportWS or transportSSE
	ticket    producer.JoinResponse
	last      time.Time // the last status or admitted frame (or the join)
	gateway   string
	state     gateway.UserState // the last status frame's
	lastFrame []byte
	// notQueued is when statuses began to say not_queued: after
	// notQueuedFor of it the user is done (not in line: the checker tells
	// whether it left or was lost). A join still in flight is "pending".
	notQueued time.Time
	// awayAt is when the user puts the phone away (zero: never).
	awayAt time.Time
}

const notQueuedFor = 30 * time.Second

// unfinished records a user still following when the drain ended.
func (u *user) unfinished() {
	// A gap still open when the drain ended is a gap too: a client that
	// could not reach a gateway since may have been swept, as documented.
	if now := time.Now(); !u.last.IsZero() && now.Sub(u.last) > gapRecorded {
		u.c.h.AddGap(chaos.Gap{Event: u.event, User: u.id, From: u.last, To: now})
	}
	u.c.h.AddUnfinished(chaos.Unfinished{Event: u.event, User: u.id, State: string(u.state), LastFrame: string(u.lastFrame), At: u.last})
}

func (u *user) run(ctx context.Context) {
	c := u.c
	if !u.join(ctx) {
		return
	}
	if c.rng.Float64() < 0.05 { // a double click: a second join at once
		u.joinOnce(ctx, c.producers[c.rng.IntN(len(c.producers))])
	}
	var leaveAt, reconnectAt time.Time
	switch p := c.rng.Float64(); {
	case p < 0.05:
		leaveAt = time.Now().Add(c.rng.Between(time.Second, 10*time.Second))
	case p < 0.10:
		reconnectAt = time.Now().Add(c.rng.Between(time.Second, 5*time.Second))
	case p < 0.22:
		// A phone put away: the page closes for longer than the grace,
		// then opens again (the place, or the turn called meanwhile, is
		// kept: away).
		u.awayAt = time.Now().Add(c.rng.Between(time.Second, 10*time.Second))
	}
	u.last = time.Now()
	for ctx.Err() == nil {
		conn := u.connect(ctx)
		if conn == nil { // the drain ended
			u.unfinished()
			return
		}
		done, admitted := u.follow(ctx, conn, leaveAt, reconnectAt)
		if !reconnectAt.IsZero() && time.Now().After(reconnectAt) {
			reconnectAt = time.Time{}
		}
		if !done && admitted == nil && !u.awayAt.IsZero() && !time.Now().Before(u.awayAt) {
			conn.Close(false)
			u.stepAway(ctx)
			continue
		}
		if done {
			conn.Close(true)
			return
		}
		if admitted != nil {
			u.afterAdmission(ctx, conn, *admitted)
			return
		}
		conn.Close(false)
	}
}

// stepAway keeps the page closed for longer than the gateways' grace (so
// that a turn coming meanwhile is called), then lets the caller open it
// again; the absence is recorded, not taken for a gap.
func (u *user) stepAway(ctx context.Context) {
	from := time.Now()
	clock.Sleep(ctx, u.c.rng.Between(disconnectGrace+time.Second, disconnectGrace+15*time.Second))
	u.last, u.awayAt, u.notQueued = time.Now(), time.Time{}, time.Time{}
	u.c.h.AddAway(chaos.Away{Event: u.event, User: u.id, From: from, To: u.last})
}

// join joins through either producer-api, trying again (the other one
// first) after no answer or a 503, as a browser's page does; it reports
// whether a join was acknowledged.
func (u *user) join(ctx context.Context) bool {
	c := u.c
	first := c.rng.IntN(len(c.producers))
	for attempt := range 6 {
		if ctx.Err() != nil {
			return false
		}
		p := c.producers[(first+attempt)%len(c.producers)]
		if ok, retry := u.joinOnce(ctx, p); ok {
			return true
		} else if !retry {
			return false
		}
		clock.Sleep(ctx, time.Duration(attempt+1)*300*time.Millisecond)
	}
	return false
}

// joinOnce sends one join through p; retry says whether another attempt
// makes sense.
func (u *user) joinOnce(ctx context.Context, p *node) (ok, retry bool) {
	c := u.c
	at := time.Now()
	jctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	j, ref, err := c.api(p).JoinWithKey(jctx, u.event, u.id, u.visit)
	cancel()
	rec := joinRecord(u.event, u.id, at, j.JoinedAt, ref, err)
	rec.Visit = u.visit
	c.h.AddJoin(rec)
	if err == nil && ref == nil {
		if u.ticket.Ticket == "" {
			u.ticket = j
		}
		return true, false
	}
	return false, err != nil || ref.Status == http.StatusServiceUnavailable
}

func joinRecord(event, user string, at time.Time, stamp int64, ref *testclient.Refusal, err error) chaos.Join {
	j := chaos.Join{Event: event, User: user, At: at, Outcome: outcome(ref, err)}
	if j.Acked() {
		j.Stamp = stamp
	}
	return j
}

// outcome names an answer: "202", "503 broker_unavailable", or "error".
func outcome(ref *testclient.Refusal, err error) chaos.Outcome {
	switch {
	case err != nil:
		return chaos.NoAnswer
	case ref != nil:
		return chaos.Outcome(fmt.Sprintf("%d %s", ref.Status, ref.Code))
	}
	return "202"
}

// connect opens a socket (or a stream) on a gateway that answers, trying
// each in turn (a random one first) until ctx ends.
func (u *user) connect(ctx context.Context) statusConn {
	c := u.c
	for wait := 100 * time.Millisecond; ctx.Err() == nil; wait = min(2*wait, time.Second) {
		first := c.rng.IntN(len(c.gateways))
		for i := range c.gateways {
			g := c.gateways[(first+i)%len(c.gateways)]
			if g.alias == u.gateway && len(c.gateways) > 1 && i == 0 {
				continue // after a failure, another gateway first
			}
			a := c.addr(g.alias)
			if a == "" {
				continue
			}
			conn, o, derr := u.dial(ctx, a)
			cn := chaos.Connect{Event: u.event, User: u.id, Gateway: g.alias, At: time.Now(), Outcome: o, Transport: u.transport}
			if o == chaos.NoAnswer && derr != nil {
				cn.Err = derr.Error()
				if c.addr(g.alias) != a { // the address moved while we dialled
					cn.Err = "address moved: " + cn.Err
				}
			}
			c.h.AddConnect(cn)
			u.gateway = g.alias
			if conn != nil {
				return conn
			}
		}
		clock.Sleep(ctx, wait)
	}
	return nil
}

// dial opens the user's transport on the gateway at addr: the connection
// (nil when refused), the outcome ("101" or "200", the refusal's status,
// or no answer) and, with no answer, the error.
func (u *user) dial(ctx context.Context, addr string) (statusConn, chaos.Outcome, error) {
	if u.transport == transportSSE {
		s, status, err := dialSSE(ctx, addr, u.event, u.ticket.Ticket)
		switch {
		case err == nil:
			return s, "200", nil
		case status != 0:
			return nil, chaos.Outcome(fmt.Sprint(status)), nil
		}
		return nil, chaos.NoAnswer, err
	}
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(dctx, "ws://"+addr+u.ticket.StatusURL, nil)
	if err != nil {
		if resp != nil {
			return nil, chaos.Outcome(fmt.Sprint(resp.StatusCode)), nil
		}
		return nil, chaos.NoAnswer, err
	}
	ws.SetReadLimit(64 << 10)
	return wsConn{ws}, "101", nil
}

// follow reads the socket until the user is admitted (admitted), is done
// without an admission (done: it left, or its stay passed while it was
// away), or the socket dies or stays silent for idleTimeout (neither: the
// caller reconnects).
func (u *user) follow(ctx context.Context, conn statusConn, leaveAt, reconnectAt time.Time) (done bool, admitted *gateway.AdmittedFrame) {
	c := u.c
	for {
		wait := idleTimeout
		if !leaveAt.IsZero() {
			wait = min(wait, max(time.Until(leaveAt), time.Millisecond))
		}
		if !reconnectAt.IsZero() {
			wait = min(wait, max(time.Until(reconnectAt), time.Millisecond))
		}
		if !u.awayAt.IsZero() {
			wait = min(wait, max(time.Until(u.awayAt), time.Millisecond))
		}
		rctx, cancel := context.WithTimeout(ctx, wait)
		b, err := conn.Read(rctx)
		cancel()
		now := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				u.unfinished()
				return true, nil
			}
			if !leaveAt.IsZero() && !now.Before(leaveAt) {
				return u.leave(ctx), nil
			}
			return false, nil // dead, silent, or a reconnect of our own
		}
		if now.Sub(u.last) > gapRecorded {
			c.h.AddGap(chaos.Gap{Event: u.event, User: u.id, From: u.last, To: now})
		}
		u.last, u.lastFrame = now, b
		var f struct {
			Type  string
			State gateway.UserState
		}
		_ = json.Unmarshal(b, &f)
		switch f.Type {
		case "status":
			c.statuses.Add(1)
			u.state = f.State
			c.states.Store(u.id, f.State)
			switch {
			case f.State == gateway.StateNoShow:
				// Called while away and not back within the window: the
				// checker holds it to an absence of the window at least.
				c.h.AddLapse(chaos.TurnLapsed{Event: u.event, User: u.id, At: now})
				return true, nil
			case f.State == gateway.StateExpired:
				// Admitted while away, and the hold is over: the checker
				// holds it to a long absence (a turn never told of is
				// never lost).
				c.h.AddExpired(chaos.Expired{Event: u.event, User: u.id, At: now, Transport: u.transport})
				return true, nil
			case f.State != gateway.StateNotQueued:
				u.notQueued = time.Time{}
			case u.notQueued.IsZero():
				u.notQueued = now
			case now.Sub(u.notQueued) > notQueuedFor:
				return true, nil
			}
		case "admitted":
			var a gateway.AdmittedFrame
			if err := json.Unmarshal(b, &a); err != nil {
				c.t.Errorf("%s: admitted frame %s: %v", u.id, b, err)
				return true, nil
			}
			// The token as of its stay: a JWT (not an e2 token) signed, this
			// event's and user's, its expiry the frame's and its jti this
			// admission's. A frame read after the stay ended (Redis or the
			// gateway paused longer than the hold) is counted apart.
			tok, verr := c.verifier.Verify(a.EntryToken, u.event, time.UnixMilli(a.ExpiresAt-1))
			if u.event == c.drop {
				c.dropToken.Store(a.EntryToken) // another event's token, for the guard's probes
			}
			c.h.AddAdmission(chaos.Admission{Event: u.event, User: u.id, Gateway: u.gateway, At: now, Transport: u.transport,
				ExpiresAt: a.ExpiresAt, TokenValid: verr == nil && !tok.Legacy && tok.UserID == u.id && tok.Expires == a.ExpiresAt &&
					tok.ID == entry.AdmissionID(u.event, u.id, a.ExpiresAt)})
			return false, &a
		}
	}
}

// leave asks producer-api to take the user out of line; done once it
// answered 202 (or after three tries that got no answer, which may have
// taken effect).
func (u *user) leave(ctx context.Context) bool {
	c := u.c
	for attempt := range 3 {
		p := c.producers[(attempt+c.rng.IntN(2))%len(c.producers)]
		at := time.Now()
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ref, err := c.api(p).Leave(lctx, u.event, u.id)
		cancel()
		c.h.AddLeave(chaos.Leave{Event: u.event, User: u.id, At: at, Outcome: outcome(ref, err)})
		if err == nil && ref == nil {
			return true
		}
		clock.Sleep(ctx, 500*time.Millisecond)
	}
	return true
}

// afterAdmission buys a seat (buyerShare of the main event's users: see
// buy), visits the shop through waitq-guard (half of the main event's
// users, when the campaign runs one), then gives the slot back at
// once or after a think time, over HTTP with the entry token or as a
// socket frame, or keeps it to its end; a visit may end on the guard's
// done path, which releases the slot itself.
func (u *user) afterAdmission(ctx context.Context, conn statusConn, a gateway.AdmittedFrame) {
	c := u.c
	defer conn.Close(false)
	if u.event == c.arrive {
		u.comeOrNot(ctx, a)
		return
	}
	if u.event == c.main && c.rng.Float64() < buyerShare {
		u.buy(ctx, a.EntryToken)
	}
	if u.event == c.main && c.shop != nil && c.rng.Float64() < 0.5 {
		if u.visitShop(ctx, a) {
			return
		}
	}
	p := c.rng.Float64()
	if p >= 0.85 {
		if u.event == c.main && c.shop != nil && c.rng.Float64() < 0.1 {
			u.probeExpired(ctx, a) // the Back button after the hold
		}
		return // the hold runs out
	}
	clock.Sleep(ctx, c.rng.Between(0, 3*time.Second))
	if p >= 0.5 {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := conn.Release(wctx)
		cancel()
		if err == nil {
			c.h.AddRelease(chaos.Release{Event: u.event, User: u.id, At: time.Now(), Via: "socket", Outcome: "sent", ExpiresAt: a.ExpiresAt})
			time.Sleep(100 * time.Millisecond) // let the frame be read before the close
			conn.Close(true)
			return
		}
		// The socket is gone, or a stream: give it back over HTTP.
	}
	if u.release(ctx, a) && u.event == c.main && c.shop != nil && c.rng.Float64() < 0.2 {
		u.probeReleased(ctx, a) // a shared link, used after the release
	}
}

// release posts the entry token to a gateway's release route, trying the
// others after no answer or a 503; it reports whether an answer said the
// slot was released.
func (u *user) release(ctx context.Context, a gateway.AdmittedFrame) bool {
	c := u.c
	body, _ := json.Marshal(map[string]string{"token": a.EntryToken})
	hc := &http.Client{Timeout: 3 * time.Second}
	first := c.rng.IntN(len(c.gateways))
	for attempt := range 6 {
		g := c.gateways[(first+attempt)%len(c.gateways)]
		addr := c.addr(g.alias)
		if addr == "" {
			continue
		}
		r := chaos.Release{Event: u.event, User: u.id, At: time.Now(), Via: "http", Outcome: chaos.NoAnswer, ExpiresAt: a.ExpiresAt}
		resp, err := hc.Post("http://"+addr+"/v1/events/"+u.event+"/release", "application/json", bytes.NewReader(body))
		if err == nil {
			var rr gateway.ReleaseResponse
			var e httpkit.ErrorBody
			b := new(bytes.Buffer)
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			r.Answered = time.Now()
			r.Outcome = chaos.Outcome(fmt.Sprint(resp.StatusCode))
			if resp.StatusCode == http.StatusOK {
				_ = json.Unmarshal(b.Bytes(), &rr)
				r.Released = rr.Released
			} else if json.Unmarshal(b.Bytes(), &e) == nil && e.Error.Code != "" {
				r.Outcome = chaos.Outcome(fmt.Sprintf("%d %s", resp.StatusCode, e.Error.Code))
			}
		}
		c.h.AddRelease(r)
		if err == nil && !strings.HasPrefix(string(r.Outcome), "503") {
			return r.Released
		}
		clock.Sleep(ctx, 300*time.Millisecond)
	}
	return false
}

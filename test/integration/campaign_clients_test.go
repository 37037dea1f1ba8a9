//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	"github.com/waitq/waitq/internal/testkit/testclient"
	"github.com/waitq/waitq/internal/tools/chaos"
	"github.com/waitq/waitq/pkg/entry"
)

// maxInFlight bounds the users followed at once (each holds a socket).
const maxInFlight = 4000

// load starts a user every 1/rate s until loadCtx ends; each is followed
// until done or until drainCtx ends. A quarter of them join the drop.
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
		if i%4 == 3 {
			ev = c.drop
		}
		u := &user{c: c, event: ev, id: fmt.Sprintf("u%06d", i)}
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
	ticket    producer.JoinResponse
	last      time.Time // the last status or admitted frame (or the join)
	gateway   string
	state     gateway.UserState // the last status frame's
	lastFrame []byte
	// notQueued is when statuses began to say not_queued: after
	// notQueuedFor of it the user is done (not in line: the checker tells
	// whether it left or was lost). A join still in flight is "pending".
	notQueued time.Time
}

const notQueuedFor = 30 * time.Second

// unfinished records a user still following when the drain ended.
func (u *user) unfinished() {
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
	}
	u.last = time.Now()
	for ctx.Err() == nil {
		ws := u.connect(ctx)
		if ws == nil { // the drain ended
			u.unfinished()
			return
		}
		done, admitted := u.follow(ctx, ws, leaveAt, reconnectAt)
		if !reconnectAt.IsZero() && time.Now().After(reconnectAt) {
			reconnectAt = time.Time{}
		}
		if done {
			ws.Close(websocket.StatusNormalClosure, "")
			return
		}
		if admitted != nil {
			u.afterAdmission(ctx, ws, *admitted)
			return
		}
		ws.CloseNow()
	}
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
	j, ref, err := c.api(p).Join(jctx, u.event, u.id)
	cancel()
	c.h.AddJoin(joinRecord(u.event, u.id, at, j.JoinedAt, ref, err))
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

// connect opens a socket on a gateway that answers, trying each in turn
// (a random one first) until ctx ends.
func (u *user) connect(ctx context.Context) *websocket.Conn {
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
			dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			ws, resp, err := websocket.Dial(dctx, "ws://"+a+u.ticket.StatusURL, nil)
			cancel()
			o := chaos.Outcome("101")
			if err != nil {
				o = chaos.NoAnswer
				if resp != nil {
					o = chaos.Outcome(fmt.Sprint(resp.StatusCode))
				}
			}
			c.h.AddConnect(chaos.Connect{Event: u.event, User: u.id, Gateway: g.alias, At: time.Now(), Outcome: o})
			u.gateway = g.alias
			if err == nil {
				ws.SetReadLimit(64 << 10)
				return ws
			}
		}
		clock.Sleep(ctx, wait)
	}
	return nil
}

// follow reads the socket until the user is admitted (admitted), is done
// without an admission (done: it left, or its hold passed while it was
// away), or the socket dies or stays silent for idleTimeout (neither: the
// caller reconnects).
func (u *user) follow(ctx context.Context, ws *websocket.Conn, leaveAt, reconnectAt time.Time) (done bool, admitted *gateway.AdmittedFrame) {
	c := u.c
	for {
		wait := idleTimeout
		if !leaveAt.IsZero() {
			wait = min(wait, max(time.Until(leaveAt), time.Millisecond))
		}
		if !reconnectAt.IsZero() {
			wait = min(wait, max(time.Until(reconnectAt), time.Millisecond))
		}
		rctx, cancel := context.WithTimeout(ctx, wait)
		_, b, err := ws.Read(rctx)
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
			case f.State == gateway.StateExpired:
				return true, nil // admitted while away, and the hold is over
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
			// The token as of its hold: a JWT (not an e2 token) signed, this
			// event's and user's, its expiry the frame's and its jti this
			// admission's. A frame read after the hold ended (Redis or the
			// gateway paused longer than the hold) is counted apart.
			tok, verr := c.verifier.Verify(a.EntryToken, u.event, time.UnixMilli(a.ExpiresAt-1))
			c.h.AddAdmission(chaos.Admission{Event: u.event, User: u.id, Gateway: u.gateway, At: now,
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

// afterAdmission gives the slot back at once or after a think time, over
// HTTP with the entry token or as a socket frame, or keeps it to its end.
func (u *user) afterAdmission(ctx context.Context, ws *websocket.Conn, a gateway.AdmittedFrame) {
	c := u.c
	defer ws.CloseNow()
	p := c.rng.Float64()
	if p >= 0.85 {
		return // the hold runs out
	}
	clock.Sleep(ctx, c.rng.Between(0, 3*time.Second))
	if p >= 0.5 {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := ws.Write(wctx, websocket.MessageText, []byte(`{"type":"release"}`))
		cancel()
		if err == nil {
			c.h.AddRelease(chaos.Release{Event: u.event, User: u.id, At: time.Now(), Via: "socket", Outcome: "sent"})
			time.Sleep(100 * time.Millisecond) // let the frame be read before the close
			ws.Close(websocket.StatusNormalClosure, "")
			return
		}
		// The socket is gone: give it back over HTTP.
	}
	u.release(ctx, a.EntryToken)
}

// release posts the entry token to a gateway's release route, trying the
// others after no answer or a 503.
func (u *user) release(ctx context.Context, token string) {
	c := u.c
	body, _ := json.Marshal(map[string]string{"token": token})
	hc := &http.Client{Timeout: 3 * time.Second}
	first := c.rng.IntN(len(c.gateways))
	for attempt := range 6 {
		g := c.gateways[(first+attempt)%len(c.gateways)]
		a := c.addr(g.alias)
		if a == "" {
			continue
		}
		r := chaos.Release{Event: u.event, User: u.id, At: time.Now(), Via: "http", Outcome: chaos.NoAnswer}
		resp, err := hc.Post("http://"+a+"/v1/events/"+u.event+"/release", "application/json", bytes.NewReader(body))
		if err == nil {
			var rr gateway.ReleaseResponse
			var e httpkit.ErrorBody
			b := new(bytes.Buffer)
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
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
			return
		}
		clock.Sleep(ctx, 300*time.Millisecond)
	}
}

// nemesis runs the plan: each step at its time, healed after its length.
func (c *campaign) nemesis(start time.Time, plan []chaos.Step) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, st := range plan {
		time.Sleep(time.Until(start.Add(st.At)))
		wg.Go(func() { c.inject(st) })
	}
}

// inject runs one fault: waits for the consumer group to settle first when
// the target is a consumer (skipping the fault if it does not within 5 s),
// injects it, waits its length and heals it.
func (c *campaign) inject(st chaos.Step) {
	n := c.nodes[st.Target.Name]
	if st.Target.Role == chaos.Consumer {
		deadline := time.Now().Add(5 * time.Second)
		for !c.groupSettled() {
			if time.Now().After(deadline) {
				c.t.Logf("nemesis: %s %s skipped, the consumer group did not settle", st.Kind, n.alias)
				c.h.AddFault(chaos.Fault{Kind: st.Kind, Target: n.alias, Role: st.Target.Role, Skipped: true})
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if _, busy := c.faulted.LoadOrStore(n.alias, true); busy {
		c.h.AddFault(chaos.Fault{Kind: st.Kind, Target: n.alias, Role: st.Target.Role, Skipped: true})
		return
	}
	defer c.faulted.Delete(n.alias)
	f := chaos.Fault{Kind: st.Kind, Target: n.alias, Role: st.Target.Role, Start: time.Now()}
	var inject, heal func() error
	switch st.Kind {
	case chaos.Kill:
		inject, heal = n.kill, n.start
	case chaos.Pause:
		inject, heal = n.pause, n.unpause
	case chaos.Restart:
		inject, heal = n.stop, n.start
	case chaos.Partition:
		inject = func() error { return n.disconnect(c.s.net) }
		heal = func() error { return n.connect(c.s.net) }
	}
	// An injection that fails left the target as it was (the engine
	// refused: a pause's cgroup freeze can fail under load): tried again a
	// few times, then counted as skipped, not as a broken promise.
	var injectErr error
	for try := range 3 {
		if injectErr = inject(); injectErr == nil {
			break
		}
		c.t.Logf("nemesis: %s %s: inject (try %d): %v", st.Kind, n.alias, try+1, injectErr)
		time.Sleep(500 * time.Millisecond)
	}
	if injectErr != nil {
		f.Skipped = true
		c.h.AddFault(f)
		return
	}
	f.Start = time.Now()
	c.t.Logf("nemesis: %s %s for %v", st.Kind, n.alias, st.For)
	time.Sleep(time.Until(f.Start.Add(st.For)))
	// Heal for sure: a failed heal is retried, and reported.
	var errs []error
	for range 5 {
		err := heal()
		if err == nil {
			f.Healed = time.Now()
			break
		}
		errs = append(errs, err)
		time.Sleep(time.Second)
	}
	if f.Healed.IsZero() {
		f.Err = "heal: " + errors.Join(errs...).Error()
	}
	c.h.AddFault(f)
}

package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// slow never ticks within a test: whatever is admitted, and heard of, comes
// from the fast track and the admissions channel, not from a status or
// monitor tick.
var slow = gateway.Config{StatusInterval: time.Minute, AdmitInterval: time.Minute, DisconnectGrace: 2 * time.Minute}

// TestJoinWithRoomIsAdmittedAtOnce: on an event with free slots and nobody
// waiting, a join is admitted as the consumer writes it, and the user's
// socket gets the admitted frame long before any tick could have run.
func TestJoinWithRoomIsAdmittedAtOnce(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 5, 1)
	fastStore := sys.StoreWith(redisstore.Options{FastTrack: queue.DefaultAdmitBatch})
	cons := sys.StartConsumerInto(sys.ConsumerConfig(), fastStore)
	e := startGatewayOn(t, sys, fastStore, slow, nil, gateway.DefaultWriteBuffer)

	c := e.connect(t, ev, "alice")
	c.Status(inState(gateway.StatePending), 5*time.Second) // the greeting
	sys.Join(ev, "alice", e.clock.Now().UnixMilli())
	a := c.Admitted(10 * time.Second)
	if tk, err := e.entry.Verify(a.EntryToken, ev, e.clock.Now()); err != nil || tk.UserID != "alice" {
		t.Fatalf("entry token of the admitted frame: %+v %v", tk, err)
	}
	// The frame can come before the consumer's write call has returned and
	// counted the admission.
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		got := cons.Stats().Admitted
		return got == 1, fmt.Sprintf("consumer's fast track admitted %d, want 1", got)
	})
	if got := metricValue(t, e, "waitq_admitted_total"); got != 0 {
		t.Errorf("the slot monitor admitted %v: the admission must come from the join itself", got)
	}
	if got := metricValue(t, e, "waitq_admission_notices_total"); got != 1 {
		t.Errorf("admission notices %v, want 1", got)
	}
}

// TestReleaseAdmitsTheNextOnAnotherGateway: with one slot, a release through
// gateway A admits the next in line at once, and gateway B, which holds that
// user's socket, sends the admitted frame without waiting for a tick.
func TestReleaseAdmitsTheNextOnAnotherGateway(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	fastStore := sys.StoreWith(redisstore.Options{FastTrack: queue.DefaultAdmitBatch})
	sys.StartConsumerInto(sys.ConsumerConfig(), fastStore)
	clk := newClock()
	a := startGatewayOn(t, sys, fastStore, slow, clk, gateway.DefaultWriteBuffer)
	b := startGatewayOn(t, sys, fastStore, slow, clk, gateway.DefaultWriteBuffer)

	first := a.connect(t, ev, "first")
	second := b.connect(t, ev, "second")
	now := clk.Now().UnixMilli()
	sys.Join(ev, "first", now)
	sys.Join(ev, "second", now+1)
	first.Admitted(10 * time.Second)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		line := sys.Waiting(ev)
		return len(line) == 1 && line[0].User == "second", fmt.Sprintf("line %v", line)
	})

	first.Send(`{"type":"release"}`)
	f := second.Admitted(10 * time.Second)
	if f.UserID != "second" {
		t.Fatalf("admitted frame %+v", f)
	}
	holders, err := sys.Store.Client().ZCard(context.Background(), redisstore.HoldersKey(ev)).Result()
	if err != nil || holders != 1 {
		t.Fatalf("holders %d (%v), want 1", holders, err)
	}
	if got := metricValue(t, b, "waitq_admitted_total"); got != 0 {
		t.Errorf("gateway B's monitor admitted %v", got)
	}
}

// TestRateHoldsAcrossTwoGateways: 600 waiting, capacity far above, 120
// admitted a minute. Two gateways tick at once every simulated second for
// six minutes: in no 60-second window are more than 120 + the burst (10)
// admitted, the rate is used (not starved), and everyone gets in in line
// order.
func TestRateHoldsAcrossTwoGateways(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	const (
		users, perMinute, burst = 600, 120, 10
		staySeconds             = 3600
	)
	ctx := context.Background()
	if _, err := sys.Store.PutEvent(ctx, queue.Event{ID: ev, Capacity: 10_000, StaySeconds: staySeconds, AdmitPerMinute: perMinute, State: queue.StateOpen, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	msgs := make([]queue.Message, users)
	for i := range msgs {
		msgs[i] = queue.NewMessage(queue.OpJoin, ev, fmt.Sprintf("u%03d", i), int64(i+1))
	}
	if _, err := sys.Store.Ingest(ctx, msgs, 0); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	start := clk.Now()
	a := startGateway(t, sys, slow, clk)
	b := startGateway(t, sys, slow, clk)
	for range 360 {
		clk.Add(time.Second)
		var wg sync.WaitGroup
		wg.Go(func() { a.gw.MonitorTick(ctx) })
		wg.Go(func() { b.gw.MonitorTick(ctx) })
		wg.Wait()
	}

	held, err := sys.Store.Client().ZRangeWithScores(ctx, redisstore.HoldersKey(ev), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != users {
		t.Fatalf("%d of %d admitted after six minutes at %d a minute", len(held), users, perMinute)
	}
	// Admission time (seconds after start) of each user, from its stay's end.
	at := make(map[string]int64, users)
	for _, z := range held {
		at[z.Member.(string)] = (int64(z.Score) - staySeconds*1000 - start.UnixMilli()) / 1000
	}
	perSecond := map[int64]int{}
	for _, s := range at {
		perSecond[s]++
	}
	most := 0
	for from := int64(0); from <= 360; from++ {
		n := 0
		for s := from; s < from+60; s++ {
			n += perSecond[s]
		}
		if n > perMinute+burst {
			t.Errorf("%d admitted in the minute from second %d: over %d + burst %d", n, from, perMinute, burst)
		}
		most = max(most, n)
	}
	if most < perMinute {
		t.Errorf("at most %d admitted in any minute: the rate of %d is not used", most, perMinute)
	}
	// Line order: u000 … u599 joined in that order, so no one is let in
	// before anyone ahead of them.
	for i := 1; i < users; i++ {
		prev, cur := fmt.Sprintf("u%03d", i-1), fmt.Sprintf("u%03d", i)
		if at[cur] < at[prev] {
			t.Fatalf("%s admitted at %d s, before %s at %d s", cur, at[cur], prev, at[prev])
		}
	}
	t.Logf("admitted %d over 360 s, most in one minute %d (rate %d, burst %d)", len(held), most, perMinute, burst)
}

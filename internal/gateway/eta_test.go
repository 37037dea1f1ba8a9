package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestETAWaitsForTheHoldToEnd is the demo shop's walk that was told
// "Estimated wait: 5 s": one slot held for a minute by the first visitor,
// admitted 5 s before the second came (one admission in 5 s measured). The
// second visitor's estimate is now the 55 s the hold has left, not 5 s.
func TestETAWaitsForTheHoldToEnd(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	ctx := context.Background()
	if _, err := sys.Store.PutEvent(ctx, queue.Event{ID: ev, Capacity: 1, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	g := startGateway(t, sys, gateway.Config{StatusInterval: 100 * time.Millisecond, AdmitInterval: time.Hour, DisconnectGrace: time.Hour}, clk)
	ingest := func(user string) {
		t.Helper()
		now := clk.Now().UnixMilli()
		if _, err := sys.Store.Ingest(ctx, []queue.Message{queue.NewMessage(queue.OpJoin, ev, user, now)}, now); err != nil {
			t.Fatal(err)
		}
	}
	ingest("first")
	first := g.connect(t, ev, "first")
	first.Status(waiting(1, 1), 5*time.Second) // the gateway reads admittedTotal 0
	g.gw.MonitorTick(ctx)
	first.Admitted(5 * time.Second)
	clk.Add(5 * time.Second)
	ingest("second")
	second := g.connect(t, ev, "second")
	f := second.Status(waiting(1, 1), 5*time.Second)
	if f.ETASeconds == nil || *f.ETASeconds < 54 || *f.ETASeconds > 56 {
		t.Fatalf("the second visitor's estimate %v..%v s, want the 55 s the only hold has left", deref(f.ETASeconds), deref(f.ETAMaxSeconds))
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestETAFollowsTheEffectiveRate: an adaptive event whose shop has not
// reported admits nobody and tells no ETA; once two gateways tick a healthy
// shop's reports, the waiting user's ETA is never faster than the effective
// rate; when the shop fails and the rate falls, the ETA grows.
func TestETAFollowsTheEffectiveRate(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	ctx := context.Background()
	a := queue.Adaptive{TargetLatencyMs: 300, StepMs: 1000, SignalTimeoutSeconds: 10, StartAdmitPerMinute: 60, IncreasePerStep: 30}.WithDefaults(600)
	if _, err := sys.Store.PutEvent(ctx, queue.Event{ID: ev, Capacity: 10_000, StaySeconds: 3600, AdmitPerMinute: 600, State: queue.StateOpen, Partitions: 1, Adaptive: &a}); err != nil {
		t.Fatal(err)
	}
	msgs := make([]queue.Message, 2000)
	for i := range msgs {
		msgs[i] = queue.NewMessage(queue.OpJoin, ev, fmt.Sprintf("u%04d", i), int64(i+1))
	}
	if _, err := sys.Store.Ingest(ctx, msgs, 0); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	// Statuses every 100 ms; admission only when the test ticks.
	cfg := gateway.Config{StatusInterval: 100 * time.Millisecond, AdmitInterval: time.Minute, DisconnectGrace: time.Hour}
	g1, g2 := startGateway(t, sys, cfg, clk), startGateway(t, sys, cfg, clk)
	last := g1.connect(t, ev, "u1999")
	tick := func(n int, errorRate float64) {
		for range n {
			clk.Add(time.Second)
			requests, p95 := int64(100), 50.0
			r := queue.HealthReport{Reporter: "guard", WindowMs: 1000, Requests: &requests, P95Ms: &p95, ErrorRate: &errorRate}
			if err := sys.Store.ReportHealth(ctx, ev, r, clk.Now().UnixMilli()); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			wg.Go(func() { g1.gw.MonitorTick(ctx) })
			wg.Go(func() { g2.gw.MonitorTick(ctx) })
			wg.Wait()
		}
	}
	// eta waits for a frame after the ticks and returns its ETA and the
	// effective rate then.
	eta := func() (gateway.StatusFrame, int) {
		t.Helper()
		st, err := sys.Store.EventStatus(ctx, ev, clk.Now().UnixMilli())
		if err != nil {
			t.Fatal(err)
		}
		want := clk.Now().UnixMilli()
		f := last.Status(func(f gateway.StatusFrame) bool { return f.TS >= want }, 10*time.Second)
		return f, st.Control.AdmitPerMinute
	}

	for range 3 {
		g1.gw.MonitorTick(ctx)
	}
	if f, rate := eta(); f.ETASeconds != nil || rate != 0 || f.Position != 2000 {
		t.Fatalf("before any report: frame %+v at rate %d, want position 2000 and no ETA", f, rate)
	}

	tick(20, 0)
	healthy, rate := eta()
	if healthy.ETASeconds == nil || rate <= 60 {
		t.Fatalf("healthy: frame %+v at rate %d", healthy, rate)
	}
	if fastest := float64(healthy.Position) / (float64(rate) / 60); float64(*healthy.ETASeconds) < fastest-1 {
		t.Fatalf("ETA %d s for position %d is faster than the rate %d a minute allows (%.0f s)", *healthy.ETASeconds, healthy.Position, rate, fastest)
	}

	tick(10, 0.5)
	failing, low := eta()
	if low >= rate || failing.ETASeconds == nil || *failing.ETASeconds <= *healthy.ETASeconds {
		t.Fatalf("failing shop: rate %d (was %d), ETA %v (was %d)", low, rate, failing.ETASeconds, *healthy.ETASeconds)
	}
	t.Logf("healthy: %d a minute, ETA %d s at position %d; failing: %d a minute, ETA %d s at position %d",
		rate, *healthy.ETASeconds, healthy.Position, low, *failing.ETASeconds, failing.Position)
}

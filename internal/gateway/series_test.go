package gateway_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestMonitorSamplesTheSeriesOncePerPeriod: two gateways' slot monitors
// tick many times in a period and leave one sample; the next period adds
// the next one, with the admissions between them.
func TestMonitorSamplesTheSeriesOncePerPeriod(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	ctx := context.Background()
	sys.CreateEvent(ev, 2, 1)
	clk := newClock()
	cfg := gateway.Config{AdmitInterval: time.Minute, DisconnectGrace: time.Hour}
	g1, g2 := startGateway(t, sys, cfg, clk), startGateway(t, sys, cfg, clk)
	ticks := func() {
		for range 3 {
			var wg sync.WaitGroup
			wg.Go(func() { g1.gw.MonitorTick(ctx) })
			wg.Go(func() { g2.gw.MonitorTick(ctx) })
			wg.Wait()
		}
	}
	ticks()
	if got, err := sys.Store.Series(ctx, ev, clk.Now().UnixMilli()); err != nil || len(got) != 1 || got[0].Capacity != 2 {
		t.Fatalf("after one period's ticks: %+v, %v", got, err)
	}
	if _, err := sys.Store.Ingest(ctx, []queue.Message{queue.NewMessage(queue.OpJoin, ev, "a", 1), queue.NewMessage(queue.OpJoin, ev, "b", 2), queue.NewMessage(queue.OpJoin, ev, "c", 3)}, clk.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	clk.Add(queue.SeriesPeriodMs * time.Millisecond)
	ticks()
	got, err := sys.Store.Series(ctx, ev, clk.Now().UnixMilli())
	if err != nil || len(got) != 2 {
		t.Fatalf("after two periods: %+v, %v", got, err)
	}
	if s := got[1]; s.Holders != 2 || s.Waiting != 1 || s.AdmittedPerMinute == nil || *s.AdmittedPerMinute <= 0 {
		t.Fatalf("the second sample %+v: want 2 holders, 1 waiting, admissions a minute", s)
	}
}

package gateway_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testdraw"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestDropAdmitsNobodyBeforeTheOpening: two gateways tick a drop with free
// capacity and the fast track on, and nobody is admitted before the opening
// on the gateways' clock; the sockets say "prequeue" with the count gathered
// and the time to the opening, and no position. At the opening both users
// are admitted, and their frames carry the place the draw gave them.
func TestDropAdmitsNobodyBeforeTheOpening(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	clk := newClock()
	opensAt := clk.Now().Add(time.Hour).UnixMilli()
	e := sys.CreateDrop(ev, 5, 2, opensAt, 2*3600)
	fastStore := sys.StoreWith(redisstore.Options{FastTrack: queue.DefaultAdmitBatch})
	sys.StartConsumerInto(sys.ConsumerConfig(), fastStore)
	cfg := gateway.Config{StatusInterval: 100 * time.Millisecond, AdmitInterval: time.Minute, DisconnectGrace: 2 * time.Hour}
	a := startGatewayOn(t, sys, fastStore, cfg, clk, gateway.DefaultWriteBuffer)
	b := startGatewayOn(t, sys, fastStore, cfg, clk, gateway.DefaultWriteBuffer)

	alice, bob := a.connect(t, ev, "alice"), b.connect(t, ev, "bob")
	now := clk.Now().UnixMilli()
	sys.Join(ev, "alice", now)
	sys.Join(ev, "bob", now+1)
	for _, c := range []interface {
		Status(func(gateway.StatusFrame) bool, time.Duration) gateway.StatusFrame
	}{alice, bob} {
		f := c.Status(func(f gateway.StatusFrame) bool { return f.State == gateway.StatePrequeue && f.Total == 2 }, 10*time.Second)
		if f.Position != 0 || f.ETASeconds != nil || f.OpensAt != opensAt || f.OpensInSeconds < 3590 || f.OpensInSeconds > 3600 || f.DrawnPlace != 0 {
			t.Fatalf("pre-queue frame %+v", f)
		}
	}
	ctx := context.Background()
	for range 3 {
		a.gw.MonitorTick(ctx)
		b.gw.MonitorTick(ctx)
	}
	if n, _ := sys.Store.Client().ZCard(ctx, redisstore.HoldersKey(ev)).Result(); n != 0 {
		t.Fatalf("%d admitted before the opening", n)
	}

	clk.Add(time.Hour)
	a.gw.MonitorTick(ctx)
	alice.Admitted(10 * time.Second)
	bob.Admitted(10 * time.Second)
	drawn := testdraw.Order(t, e.Seed.Hex(), []string{"alice", "bob"})
	f := alice.Status(func(f gateway.StatusFrame) bool { return f.State == gateway.StateAdmitted }, 10*time.Second)
	if want := int64(slices.Index(drawn, "alice") + 1); f.DrawnPlace != want || f.OpensAt != 0 {
		t.Fatalf("alice's frame after the opening %+v, want drawn place %d", f, want)
	}
}

package redisstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestHoldsExpiredCounted: every hold that ends unconfirmed and not given
// back because its holder's slot ended is deleted and counted once, by the
// step that ends it: the monitor's tick dropping the holder, a release (and
// the fast track's admission step it runs), the ingest fast track's
// admission step, or a hold that replaces it before its holder is dropped.
func TestHoldsExpiredCounted(t *testing.T) {
	t.Parallel()
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	if _, err := s.PutEvent(ctx, queue.Event{ID: ev, Capacity: 10, StaySeconds: 60, State: queue.StateOpen, Partitions: 1, MaxItemsPerUser: 2}); err != nil {
		t.Fatal(err)
	}
	const now = int64(1_000_000)
	admitFor(t, c, ev, now+1000, "alice", "bob", "dave")
	admitFor(t, c, ev, now+2500, "helen")
	admitFor(t, c, ev, now+60_000, "carol", "erin")
	for _, h := range []struct{ user, item string }{
		{"alice", "A1"}, {"alice", "A2"}, {"bob", "B1"}, {"dave", "D1"}, {"helen", "H1"}, {"carol", "C1"}, {"carol", "C2"},
	} {
		if _, err := s.Hold(ctx, ev, h.user, h.item, now); err != nil {
			t.Fatalf("%s holds %s: %v", h.user, h.item, err)
		}
	}
	if _, _, err := s.Confirm(ctx, ev, "alice", "A2", now); err != nil {
		t.Fatal(err)
	}
	// Dave's slot has ended but no step dropped him yet: erin's hold
	// replaces his (counted by the gateway as HoldResult.Replaced).
	if r, err := s.Hold(ctx, ev, "erin", "D1", now+1500); err != nil || !r.Created || !r.Replaced {
		t.Fatalf("erin holds dave's ended D1 = %+v %v", r, err)
	}

	tick := func(at int64) queue.TickResult {
		t.Helper()
		res, err := s.Tick(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: at})
		if err != nil || len(res) != 1 {
			t.Fatalf("tick = %v %v", res, err)
		}
		return res[0]
	}
	// The tick drops alice, bob and dave: A1 and B1 end (A2 is sold, D1
	// is erin's now).
	if r := tick(now + 2000); r.Expired != 3 || r.HoldsExpired != 2 {
		t.Fatalf("tick dropping alice, bob, dave = %+v, want 3 dropped, 2 holds expired", r)
	}
	holds := c.HGetAll(ctx, redisstore.HoldsKey(ev)).Val()
	if _, ok := holds["A1"]; ok || holds["B1"] != "" || holds["D1"] == "" {
		t.Fatalf("holds after the tick: %v", holds)
	}
	items := c.HGetAll(ctx, redisstore.ItemsKey(ev)).Val()
	if items["alice"] != "A2" || items["bob"] != "" || items["dave"] != "" {
		t.Fatalf("buyers' items after the tick: %v", items)
	}
	if r := tick(now + 2100); r.HoldsExpired != 0 {
		t.Fatalf("a second tick counted %d holds again", r.HoldsExpired)
	}

	// Carol releases with the fast track on: her C1 and C2 end, and the
	// admission step of the freed slot drops helen, whose H1 ends too.
	fast := withFastTrack(t, s, 5)
	if ok, n, err := fast.Release(ctx, ev, "carol", now+3000); err != nil || !ok || n != 3 {
		t.Fatalf("release carol = %v %d %v, want true 3", ok, n, err)
	}
	if ok, n, err := fast.Release(ctx, ev, "carol", now+3001); err != nil || ok || n != 0 {
		t.Fatalf("release carol again = %v %d %v, want false 0", ok, n, err)
	}

	// The ingest fast track's admission step drops frank: F1 ends.
	admitFor(t, c, ev, now+4000, "frank")
	if _, err := s.Hold(ctx, ev, "frank", "F1", now+3500); err != nil {
		t.Fatal(err)
	}
	if r := ingest(t, fast, now+5000, msg(queue.OpJoin, ev, "gina", now+5000)); r.HoldsExpired != 1 {
		t.Fatalf("ingest dropping frank = %+v, want 1 hold expired", r)
	}
	if st, _ := s.Items(ctx, ev, now+5000); len(st) != 2 || st["A2"] != queue.ItemSold || st["D1"] != queue.ItemHeld {
		t.Fatalf("seat map at the end: %v", st)
	}
}

// TestItem: one item's state: free, held (until when, by whom), sold, a
// hold whose holder's slot ended (free), an unknown event.
func TestItem(t *testing.T) {
	t.Parallel()
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	mustPut(t, s, ev)
	const now = int64(1_000_000)
	admitFor(t, c, ev, now+60_000, "alice")
	admitFor(t, c, ev, now+1000, "bob")
	for _, h := range []struct{ user, item string }{{"alice", "A1"}, {"bob", "B1"}} {
		if _, err := s.Hold(ctx, ev, h.user, h.item, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Hold(ctx, ev, "alice", "A1", now); err != nil {
		t.Fatal(err)
	}
	admitFor(t, c, ev, now+60_000, "carol")
	if _, err := s.Hold(ctx, ev, "carol", "C1", now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Confirm(ctx, ev, "carol", "C1", now); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		item string
		at   int64
		want queue.ItemHold
	}{
		{"A1", now + 1, queue.ItemHold{State: queue.ItemHeld, ExpiresAt: now + 60_000, UserID: "alice"}},
		{"B1", now + 1, queue.ItemHold{State: queue.ItemHeld, ExpiresAt: now + 1000, UserID: "bob"}},
		{"B1", now + 1000, queue.ItemHold{State: queue.ItemFree}},
		{"C1", now + 1, queue.ItemHold{State: queue.ItemSold, UserID: "carol"}},
		{"Z9", now + 1, queue.ItemHold{State: queue.ItemFree}},
	} {
		tc.want.EventID, tc.want.Item = ev, tc.item
		if got, err := s.Item(ctx, ev, tc.item, tc.at); err != nil || got != tc.want {
			t.Errorf("item %s at +%d = %+v %v, want %+v", tc.item, tc.at-now, got, err, tc.want)
		}
	}
	if _, err := s.Item(ctx, "nosuch-"+ev, "A1", now); !errors.Is(err, queue.ErrEventNotFound) {
		t.Fatalf("item of an unknown event = %v", err)
	}
}

package rebuild_test

import (
	"maps"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
)

// TestRebuildRestoresHoldsAndSales: holds taken, given back, confirmed and
// ended with a release are recorded; after Redis is emptied the rebuild
// gives back the same seat map, the holds bounded by their holders' slots
// (free once the slots end, the sold items staying sold), and the rules
// hold on the rebuilt state.
func TestRebuildRestoresHoldsAndSales(t *testing.T) {
	e := newEnv(t, 10)
	e.sys.StartConsumerInto(e.sys.ConsumerConfig(), e.store)
	base := time.Now().UnixMilli()
	for i := range 6 {
		e.sys.Join(e.ev, user(i), base+int64(i))
	}
	e.waitLine(6)
	if r := e.tick(time.Now(), 0); len(r.Admitted) != 6 {
		t.Fatalf("admitted %v, want 6", r.Admitted)
	}
	now := func() int64 { return time.Now().UnixMilli() }
	hold := func(u, item string) {
		t.Helper()
		if _, err := e.store.Hold(e.ctx, e.ev, u, item, now()); err != nil {
			t.Fatalf("hold %s by %s: %v", item, u, err)
		}
	}
	hold(user(0), "S0")
	hold(user(1), "S1")
	hold(user(2), "S2")
	hold(user(3), "S3")
	hold(user(4), "S4")
	if _, _, err := e.store.Confirm(e.ctx, e.ev, user(1), "S1", now()); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.store.Unhold(e.ctx, e.ev, user(2), "S2", now()); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, _, err := e.store.Confirm(e.ctx, e.ev, user(3), "S3", now()); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := e.store.Release(e.ctx, e.ev, user(3), now()); err != nil || !ok { // S3 stays sold
		t.Fatal(ok, err)
	}
	if ok, _, err := e.store.Release(e.ctx, e.ev, user(4), now()); err != nil || !ok { // S4 is free again
		t.Fatal(ok, err)
	}
	want := map[string]queue.ItemState{"S0": queue.ItemHeld, "S1": queue.ItemSold, "S3": queue.ItemSold}
	items := func(at int64) map[string]queue.ItemState {
		t.Helper()
		got, err := e.store.Items(e.ctx, e.ev, at)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := items(now()); !maps.Equal(got, want) {
		t.Fatalf("before: %v, want %v", got, want)
	}

	if err := e.sys.Store.Client().FlushAll(e.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for range 2 { // and the whole log again: the same state
		if _, err := e.rebuilder().Rebuild(e.ctx, e.ev); err != nil {
			t.Fatal(err)
		}
		if got := items(now()); !maps.Equal(got, want) {
			t.Fatalf("after the rebuild: %v, want %v", got, want)
		}
	}
	// The rules stand on the rebuilt state: S0 is user 0's, the limit of
	// user 1 counts the purchase, S4 is free.
	if _, err := e.store.Hold(e.ctx, e.ev, user(5), "S0", now()); queue.ErrorCode(err) != queue.CodeItemHeld {
		t.Fatalf("hold of a rebuilt hold by another = %v", err)
	}
	if _, err := e.store.Hold(e.ctx, e.ev, user(1), "S9", now()); queue.ErrorCode(err) != queue.CodeHoldLimit {
		t.Fatalf("hold past a rebuilt purchase = %v", err)
	}
	hold(user(5), "S4")
	// Once the slots end, only the sold items are taken.
	later := now() + 61_000
	if got, want := items(later), map[string]queue.ItemState{"S1": queue.ItemSold, "S3": queue.ItemSold}; !maps.Equal(got, want) {
		t.Fatalf("after the slots ended: %v, want %v", got, want)
	}
}

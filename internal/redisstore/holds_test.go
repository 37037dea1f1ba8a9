package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// admitFor gives users a recorded slot of ev ending at until.
func admitFor(t *testing.T, c *redis.Client, ev string, until int64, users ...string) {
	t.Helper()
	for _, u := range users {
		if err := c.ZAdd(context.Background(), redisstore.HoldersKey(ev), redis.Z{Score: float64(until), Member: u}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHoldRules(t *testing.T) {
	t.Parallel()
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	mustPut(t, s, ev)
	const now = int64(1_000_000)
	admitFor(t, c, ev, now+60_000, "alice", "bob")

	r, err := s.Hold(ctx, ev, "alice", "A1", now)
	h, created := r.Hold, r.Created
	if err != nil || !created || h.ExpiresAt != now+60_000 || h.UserID != "alice" {
		t.Fatalf("first hold = %+v %v %v", h, created, err)
	}
	if r2, err := s.Hold(ctx, ev, "alice", "A1", now+1); err != nil || r2.Created || r2.Hold != h {
		h2, created := r2.Hold, r2.Created
		t.Fatalf("same hold again = %+v %v %v, want %+v not created", h2, created, err, h)
	}
	for _, tc := range []struct {
		name       string
		user, item string
		want       error
	}{
		{"another holder", "bob", "A1", queue.ErrItemHeld},
		{"over the limit", "alice", "A2", queue.ErrHoldLimit},
		{"no slot", "carol", "A3", queue.ErrNoSlot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Hold(ctx, ev, tc.user, tc.item, now+2); !errors.Is(err, tc.want) {
				t.Fatalf("hold = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := s.Hold(ctx, "nosuch-"+ev, "alice", "A1", now); !errors.Is(err, queue.ErrEventNotFound) {
		t.Fatalf("hold in an unknown event = %v", err)
	}

	// Compare-and-delete: bob cannot give alice's hold back.
	if _, err := s.Unhold(ctx, ev, "bob", "A1", now+3); !errors.Is(err, queue.ErrNotHolder) {
		t.Fatalf("unhold by another = %v, want not_holder", err)
	}
	if st, _ := s.Items(ctx, ev, now+3); st["A1"] != queue.ItemHeld {
		t.Fatalf("A1 after a refused unhold: %v", st)
	}
	if _, _, err := s.Confirm(ctx, ev, "bob", "A1", now+3); !errors.Is(err, queue.ErrNotHolder) {
		t.Fatalf("confirm by another = %v, want not_holder", err)
	}
	if ok, err := s.Unhold(ctx, ev, "alice", "A1", now+4); err != nil || !ok {
		t.Fatalf("unhold by the holder = %v %v", ok, err)
	}
	if ok, err := s.Unhold(ctx, ev, "bob", "A1", now+4); err != nil || ok {
		t.Fatalf("unhold of a free item = %v %v, want false nil", ok, err)
	}

	// Bob takes it and buys it: sold for good, counted against his limit.
	if _, err := s.Hold(ctx, ev, "bob", "A1", now+5); err != nil {
		t.Fatal(err)
	}
	if sale, fresh, err := s.Confirm(ctx, ev, "bob", "A1", now+6); err != nil || sale.UserID != "bob" || !fresh {
		t.Fatalf("confirm = %+v %v %v", sale, fresh, err)
	}
	if _, fresh, err := s.Confirm(ctx, ev, "bob", "A1", now+7); err != nil || fresh {
		t.Fatalf("confirm again = %v %v", fresh, err)
	}
	if _, _, err := s.Confirm(ctx, ev, "alice", "A1", now+7); !errors.Is(err, queue.ErrItemSold) {
		t.Fatalf("confirm of a sold item = %v", err)
	}
	if _, err := s.Hold(ctx, ev, "alice", "A1", now+7); !errors.Is(err, queue.ErrItemSold) {
		t.Fatalf("hold of a sold item = %v", err)
	}
	if _, err := s.Unhold(ctx, ev, "bob", "A1", now+7); !errors.Is(err, queue.ErrNotHolder) {
		t.Fatalf("unhold of a sold item = %v", err)
	}
	if _, err := s.Hold(ctx, ev, "bob", "B1", now+8); !errors.Is(err, queue.ErrHoldLimit) {
		t.Fatalf("hold past a purchase at the limit = %v", err)
	}
}

func TestHoldEndsWithTheSlot(t *testing.T) {
	t.Parallel()
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	if _, err := s.PutEvent(ctx, queue.Event{ID: ev, Capacity: 10, StaySeconds: 60, State: queue.StateOpen, Partitions: 1, MaxItemsPerUser: 2}); err != nil {
		t.Fatal(err)
	}
	const now = int64(1_000_000)
	admitFor(t, c, ev, now+1000, "alice")
	admitFor(t, c, ev, now+60_000, "bob", "carol")
	for _, it := range []string{"A1", "A2"} {
		if _, err := s.Hold(ctx, ev, "alice", it, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Hold(ctx, ev, "carol", "C1", now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Confirm(ctx, ev, "carol", "C1", now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Hold(ctx, ev, "carol", "C2", now); err != nil {
		t.Fatal(err)
	}
	// Alice's slot expires: her holds are free at once, without a write.
	if st, _ := s.Items(ctx, ev, now+1000); st["A1"] != "" || st["A2"] != "" || st["C1"] != queue.ItemSold || st["C2"] != queue.ItemHeld {
		t.Fatalf("items after alice's slot ended: %v", st)
	}
	if r, err := s.Hold(ctx, ev, "bob", "A1", now+1000); err != nil || !r.Created || !r.Replaced {
		t.Fatalf("bob holding an expired hold's item = %+v %v", r, err)
	}
	// Carol releases her slot: C2 is free in the same step, C1 stays sold.
	if ok, _, err := s.Release(ctx, ev, "carol", now+2000); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if n, _ := c.HExists(ctx, redisstore.HoldsKey(ev), "C2").Result(); n {
		t.Fatal("carol's hold of C2 outlived her release's step")
	}
	if st, _ := s.Items(ctx, ev, now+2000); st["C2"] != "" || st["C1"] != queue.ItemSold {
		t.Fatalf("items after carol's release: %v", st)
	}
	// Alice admitted again: her old holds stay dead; her limit counts anew.
	admitFor(t, c, ev, now+90_000, "alice")
	if _, err := s.Hold(ctx, ev, "alice", "A2", now+3000); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Hold(ctx, ev, "alice", "A3", now+3000); err != nil {
		t.Fatalf("second of two allowed after re-admission = %v", err)
	}
	if _, _, err := s.Confirm(ctx, ev, "alice", "A1", now+3000); !errors.Is(err, queue.ErrNotHolder) {
		t.Fatalf("confirm of bob's item by alice = %v", err)
	}
}

func TestHoldRace(t *testing.T) {
	t.Parallel()
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	mustPut(t, s, ev)
	const now, buyers, seats = int64(1_000_000), 300, 30
	for i := range buyers {
		admitFor(t, c, ev, now+60_000, fmt.Sprintf("u%d", i))
	}
	var mu sync.Mutex
	holders := map[string]string{}
	var wg sync.WaitGroup
	for i := range buyers {
		wg.Go(func() {
			u := fmt.Sprintf("u%d", i)
			for j := range seats {
				seat := fmt.Sprintf("S%d", (i+j)%seats)
				r, err := s.Hold(ctx, ev, u, seat, now)
				created := r.Created
				if errors.Is(err, queue.ErrItemHeld) {
					continue
				}
				if errors.Is(err, queue.ErrHoldLimit) {
					return
				}
				if err != nil || !created {
					t.Errorf("hold %s by %s = %v %v", seat, u, created, err)
					return
				}
				mu.Lock()
				if prev, ok := holders[seat]; ok {
					t.Errorf("%s created for %s and %s", seat, prev, u)
				}
				holders[seat] = u
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(holders) != seats {
		t.Fatalf("%d seats held, want %d", len(holders), seats)
	}
}

// TestDeleteEventRemovesHolds: the admin DELETE takes the holds, the sales
// and the buyers' items with the event's other keys.
func TestDeleteEventRemovesHolds(t *testing.T) {
	t.Parallel()
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	mustPut(t, s, ev)
	const now = int64(1_000_000)
	admitFor(t, c, ev, now+1000, "alice", "bob")
	for _, u := range []string{"alice", "bob"} {
		if _, err := s.Hold(ctx, ev, u, "I-"+u, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Confirm(ctx, ev, "bob", "I-bob", now); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteEvent(ctx, ev, now+2000); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, redisstore.HoldsKey(ev), redisstore.SoldKey(ev), redisstore.ItemsKey(ev)).Result(); err != nil || n != 0 {
		t.Fatalf("%d hold keys left after the delete (%v)", n, err)
	}
}

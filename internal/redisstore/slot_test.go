package redisstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestStatusTellsWhenASlotFrees: with every slot taken, each waiting user
// is told when a slot frees for them if holders keep theirs to the end:
// the holds' ends in order, then each slot again a hold later; a user for
// whom a slot is free, and anyone not waiting, is told 0.
func TestStatusTellsWhenASlotFrees(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 2, 10, 7)
	tick(t, s, ev, 1000, 1) // u0 holds until 11000
	tick(t, s, ev, 3000, 1) // u1 until 13000
	users := []string{"u2", "u3", "u4", "u5", "u0", "nobody"}
	b, err := s.Status(ctx, ev, users, 5000)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{11000, 13000, 21000, 23000, 0, 0}; !slices.Equal(b.SlotAt, want) {
		t.Fatalf("slots free at %v, want %v", b.SlotAt, want)
	}
	// u0's hold has ended (not yet dropped): its slot is free for u2, and u3
	// waits for u1's.
	b, err = s.Status(ctx, ev, users, 12000)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, 13000, 23000, 33000, 0, 0}; !slices.Equal(b.SlotAt, want) {
		t.Fatalf("after a hold ended: slots free at %v, want %v", b.SlotAt, want)
	}
}

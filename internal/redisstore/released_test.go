package redisstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestReleasedListsUnexpiredReleasesAndStaysBounded: a release before the
// hold's end lists the admission until that end; a release after it lists
// nothing; each release trims the admissions whose hold ended.
func TestReleasedListsUnexpiredReleasesAndStaysBounded(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 2, 10, 4)
	tick(t, s, ev, 1000, 10) // u0, u1 hold until 11000
	if ok, _, err := s.Release(ctx, ev, "u0", 2000); err != nil || !ok {
		t.Fatalf("release u0: %v %v", ok, err)
	}
	got, err := s.Released(ctx, ev, 2000)
	want := []queue.ReleasedAdmission{{UserID: "u0", HoldUntil: 11000}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("released = %v, %v; want %v", got, err, want)
	}
	tick(t, s, ev, 3000, 10) // u2 holds until 13000
	// u1's hold ended: releasing it lists nothing.
	if ok, _, _ := s.Release(ctx, ev, "u1", 12000); ok {
		t.Fatal("an ended hold was released")
	}
	if n := c.ZCard(ctx, redisstore.ReleasedKey(ev)).Val(); n != 0 {
		t.Fatalf("the ended u0 was not trimmed: %d members", n)
	}
	if ok, _, _ := s.Release(ctx, ev, "u2", 12500); !ok {
		t.Fatal("u2 not released")
	}
	// Read after its end, the list leaves it out even before a trim.
	if got, _ := s.Released(ctx, ev, 13000); len(got) != 0 {
		t.Fatalf("an ended release listed: %v", got)
	}
	if got, _ := s.Released(ctx, ev, 12999); len(got) != 1 || got[0].UserID != "u2" {
		t.Fatalf("released = %v", got)
	}
	if got, err := s.Released(ctx, ev+"-none", 0); err != nil || len(got) != 0 {
		t.Fatalf("unknown event: %v %v", got, err)
	}
}

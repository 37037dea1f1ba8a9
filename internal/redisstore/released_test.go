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
// hold's end lists the admission until that end and queue.ReleasedKeep
// after it (a guard accepts the token through its skew past the end); a
// release after the end lists nothing; each release trims the admissions
// whose stay ended longer ago than that.
func TestReleasedListsUnexpiredReleasesAndStaysBounded(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	keep := queue.ReleasedKeep.Milliseconds()
	putLine(t, s, ev, 2, 10, 4)
	tick(t, s, ev, 1000, 10) // u0, u1 hold until 11000
	if ok, _, err := s.Release(ctx, ev, "u0", 2000); err != nil || !ok {
		t.Fatalf("release u0: %v %v", ok, err)
	}
	got, err := s.Released(ctx, ev, 2000)
	want := []queue.ReleasedAdmission{{UserID: "u0", StayUntil: 11000}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("released = %v, %v; want %v", got, err, want)
	}
	tick(t, s, ev, 3000, 10) // u2 holds until 13000
	// u1's stay ended: releasing it lists nothing, and trims nothing the
	// guards may still accept.
	if ok, _, _ := s.Release(ctx, ev, "u1", 12000); ok {
		t.Fatal("an ended hold was released")
	}
	if got, _ := s.Released(ctx, ev, 12000); !slices.Equal(got, want) {
		t.Fatalf("u0, ended 1 s ago, is no longer listed: %v", got)
	}
	if ok, _, _ := s.Release(ctx, ev, "u2", 12500); !ok {
		t.Fatal("u2 not released")
	}
	if n := c.ZCard(ctx, redisstore.ReleasedKey(ev)).Val(); n != 2 {
		t.Fatalf("%d members, want u0 (ended %d ms ago) and u2", n, 12500-11000)
	}
	// Past its end, within the guards' skew: still listed (the campaign's
	// finding: a released token passed the guard again in that window).
	if got, _ := s.Released(ctx, ev, 13000+keep-1); len(got) != 1 || got[0].UserID != "u2" {
		t.Fatalf("released = %v, want u2 until %d", got, 13000+keep)
	}
	if got, _ := s.Released(ctx, ev, 13000+keep); len(got) != 0 {
		t.Fatalf("a release ended %d ms ago listed: %v", keep, got)
	}
	// A later release trims what ended longer ago than the keep.
	tick(t, s, ev, 12600, 10) // u3 holds until 22600
	if ok, _, _ := s.Release(ctx, ev, "u3", 11000+keep+1); !ok {
		t.Fatal("u3 not released")
	}
	if m := c.ZRange(ctx, redisstore.ReleasedKey(ev), 0, -1).Val(); len(m) != 2 || slices.Contains(m, "11000|u0") {
		t.Fatalf("members %v: u0 (ended) not trimmed", m)
	}
	if got, err := s.Released(ctx, ev+"-none", 0); err != nil || len(got) != 0 {
		t.Fatalf("unknown event: %v %v", got, err)
	}
}

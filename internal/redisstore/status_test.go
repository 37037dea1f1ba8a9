package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestStatusTellsAnEndedHold is the fault campaign's finding: a user
// admitted while away (the socket's gateway down, Redis paused) whose hold
// ended and was swept before they came back was told "pending", then
// "not_queued", as if the join had never landed. A served user neither
// waiting nor holding is told the stay ended (0): the gateway says
// "expired". One who joined again and waits is told the place.
func TestStatusTellsAnEndedHold(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 2, 10, 2)
	tick(t, s, ev, 1000, 10) // u0 and u1 hold until 11000
	tick(t, s, ev, 12000, 0) // both holds ended and are dropped
	if _, err := s.Ingest(ctx, []queue.Message{msg(queue.OpJoin, ev, "u1", 12500)}, 13000); err != nil {
		t.Fatal(err)
	}
	b, err := s.Status(ctx, ev, []string{"u0", "u1", "nobody"}, 13000)
	if err != nil {
		t.Fatal(err)
	}
	want := []queue.Place{{Rank: -1, StayUntil: 0}, {Rank: 0, StayUntil: -1}, {Rank: -1, StayUntil: -1}}
	if !slices.Equal(b.Places, want) {
		t.Fatalf("places %+v, want %+v", b.Places, want)
	}
}

func TestStatusReadsPlacesAndMarksPresence(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 1, 10, 4)
	tick(t, s, ev, 1000, 10) // u0 admitted until 11000
	b, err := s.Status(ctx, ev, []string{"u2", "u0", "nobody", "u1"}, 5000)
	if err != nil {
		t.Fatal(err)
	}
	want := queue.StatusBatch{Total: 3, AdmittedTotal: 1, Places: []queue.Place{{Rank: 1, StayUntil: -1}, {Rank: -1, StayUntil: 11000}, {Rank: -1, StayUntil: -1}, {Rank: 0, StayUntil: -1}}}
	if b.Total != want.Total || b.AdmittedTotal != want.AdmittedTotal || !slices.Equal(b.Places, want.Places) {
		t.Fatalf("status %+v, want %+v", b, want)
	}
	seen, _ := c.ZRangeWithScores(ctx, redisstore.SeenKey(ev), 0, -1).Result()
	if len(seen) != 2 || seen[0].Score != 5000 || seen[1].Score != 5000 {
		t.Fatalf("presence %v: want u1 and u2 at 5000 only", seen)
	}
	// More users than one script call reads: still one batch, in order.
	many := make([]string, 2*redisstore.StatusChunk+5)
	for i := range many {
		many[i] = fmt.Sprintf("x%d", i)
	}
	many[len(many)-1] = "u3"
	b, err = s.Status(ctx, ev, many, 6000)
	if err != nil || len(b.Places) != len(many) || b.Places[len(many)-1].Rank != 2 || b.Total != 3 {
		t.Fatalf("chunked status: %d places, last %+v, total %d, %v", len(b.Places), b.Places[len(b.Places)-1], b.Total, err)
	}
}

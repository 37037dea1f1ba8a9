package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/pkg/draw"
)

// putChainDrop schedules a chain drop: a drop whose draw names a public
// source.
func putChainDrop(t *testing.T, s *redisstore.Store, ev string, deadlineSeconds int) queue.Event {
	t.Helper()
	seed, err := draw.NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	key := [draw.SaltKeySize]byte{9, 9}
	e := queue.Event{ID: ev, Capacity: 1000, StaySeconds: 60, State: queue.StateOpen, Partitions: 1,
		Schedule: queue.Schedule{OpensAt: opens, PrequeueSeconds: 60}, Seed: &seed,
		DrawSource: &draw.PublicSource{Name: "drand", Round: 7, DeadlineSeconds: deadlineSeconds}, SaltKey: &key}
	if _, err := s.PutEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return readEvent(t, s, ev)
}

func readEvent(t *testing.T, s *redisstore.Store, ev string) queue.Event {
	t.Helper()
	e, err := s.Event(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestChainDrawFreezesThenDraws: nobody is admitted at the opening while
// the public value is missing; the entries froze 5 s after it, and a
// pre-queue join ingested later is not among them (the root does not
// change) and waits after the drawn ones; the value draws the line in the
// order package draw verifies, once (a second value is refused); the
// published chain verifies and every entrant's receipt too.
func TestChainDrawFreezesThenDraws(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	e := putChainDrop(t, s, ev, 0)

	var pre []queue.Message
	for i := range 40 {
		pre = append(pre, msg(queue.OpJoin, ev, fmt.Sprintf("pre-%02d", i), opens-50_000+int64(i)))
	}
	late := msg(queue.OpJoin, ev, "late", opens-1)
	after := msg(queue.OpJoin, ev, "after", opens+10)
	ingest(t, s, opens-1000, pre...)
	if r := tick(t, s, ev, opens+1, 100); len(r.Admitted) != 0 {
		t.Fatalf("admitted %v before the public value", r.Admitted)
	}
	// Past the opening, not drawn: told as in the pre-queue, no drawn place.
	if b, err := s.Status(ctx, ev, []string{"pre-00"}, opens+1000); err != nil || b.Places[0].Rank != queue.RankPrequeue || b.Places[0].Drawn != 0 {
		t.Fatalf("a status before the draw: %+v %v", b, err)
	}
	if st, err := s.FreezeDraw(ctx, e, opens+queue.DrawFreezeLagMs-1); err != nil || st.EntryRoot != "" {
		t.Fatalf("frozen before its time: %+v %v", st, err)
	}
	// The join stamped before the opening, ingested after the freeze time.
	ingest(t, s, opens+queue.DrawFreezeLagMs, late, after)
	st, err := s.FreezeDraw(ctx, e, opens+queue.DrawFreezeLagMs)
	if err != nil || st.EntryCount != 40 || len(st.EntryRoot) != 64 {
		t.Fatalf("freeze: %+v %v", st, err)
	}
	// A consumer whose clock lags the freeze's: the root written freezes
	// the entries all the same.
	ingest(t, s, opens+1000, msg(queue.OpJoin, ev, "lagging", opens-2))
	if again, err := s.FreezeDraw(ctx, readEvent(t, s, ev), opens+6000); err != nil || again != st {
		t.Fatalf("the freeze after a lagging consumer's join: %+v, was %+v (%v)", again, st, err)
	}
	if _, err := s.SupplyPublicValue(ctx, readEvent(t, s, ev), []byte{0xab, 0xcd}, opens+6000); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SupplyPublicValue(ctx, readEvent(t, s, ev), []byte{0xab, 0xce}, opens+7000); queue.ErrorCode(err) != queue.CodePublicValueSet {
		t.Fatalf("a second value: %v", err)
	}
	e = readEvent(t, s, ev)
	c, tr, err := s.PublicChain(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if c.EntryRoot != st.EntryRoot || c.EntryCount != 40 {
		t.Fatalf("the chain's root %s (%d entries), frozen %s", c.EntryRoot, c.EntryCount, st.EntryRoot)
	}
	if err := c.Verify(); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"late", "lagging"} {
		if _, ok := c.Receipt(tr, *e.SaltKey, u); ok {
			t.Fatalf("%s, ingested after the freeze, is among the entries", u)
		}
	}
	if b, err := s.Status(ctx, ev, []string{"pre-00"}, opens+7000); err != nil || b.Places[0].Rank < 0 || b.Places[0].Drawn < 1 {
		t.Fatalf("a status after the draw: %+v %v", b, err)
	}
	// The line: the drawn order, then late (its stamp), then after.
	r := tick(t, s, ev, opens+8000, 100)
	var got []string
	for _, a := range r.Admitted {
		got = append(got, a)
	}
	want := make([]string, 0, 43)
	for _, h := range c.Order {
		for _, m := range pre {
			if rc, ok := c.Receipt(tr, *e.SaltKey, m.UserID); ok && rc.Entry == h {
				if err := draw.VerifyReceipt(c, rc); err != nil {
					t.Fatal(err)
				}
				want = append(want, m.UserID)
			}
		}
	}
	want = append(want, "lagging", "late", "after") // at their stamps
	if !slices.Equal(got, want) {
		t.Fatalf("admitted %v, want %v", got, want)
	}
}

// TestChainDrawPastItsDeadline: without a value by the deadline the draw
// is made with none at the first read, and a value then is refused
// draw_published.
func TestChainDrawPastItsDeadline(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	e := putChainDrop(t, s, ev, 60)
	ingest(t, s, opens-1000, msg(queue.OpJoin, ev, "a", opens-5000), msg(queue.OpJoin, ev, "b", opens-4000))
	st, err := s.FreezeDraw(ctx, e, opens+60_000)
	if err != nil || st.DrawnAt != opens+60_000 || st.PublicValue != "" {
		t.Fatalf("past the deadline: %+v %v", st, err)
	}
	if _, err := s.SupplyPublicValue(ctx, readEvent(t, s, ev), []byte{1}, opens+61_000); queue.ErrorCode(err) != queue.CodeDrawPublished {
		t.Fatalf("a value after the deadline: %v", err)
	}
	c, _, err := s.PublicChain(ctx, readEvent(t, s, ev))
	if err != nil || !c.PublicValueMissed || c.Verify() != nil {
		t.Fatalf("the chain drawn without a value: %+v %v", c, err)
	}
}

package redisstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testdraw"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/pkg/draw"
)

// The test clock: the drop opens at opens; its pre-queue took joins for a
// minute before.
const opens = int64(1_800_000_000_000)

func putDrop(t *testing.T, s *redisstore.Store, ev string, capacity int) draw.Seed {
	t.Helper()
	seed, err := draw.NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	e := queue.Event{ID: ev, Capacity: capacity, StaySeconds: 60, State: queue.StateOpen, Partitions: 1,
		Schedule: queue.Schedule{OpensAt: opens, PrequeueSeconds: 60}, Seed: &seed}
	if _, err := s.PutEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return seed
}

func ingest(t *testing.T, s *redisstore.Store, now int64, msgs ...queue.Message) queue.IngestResult {
	t.Helper()
	res, err := s.Ingest(context.Background(), msgs, now)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func users(zs []redis.Z) []string {
	out := make([]string, len(zs))
	for i, z := range zs {
		out[i] = z.Member.(string)
	}
	return out
}

// TestDropAdmitsTheDrawnOrderAtTheOpening: pre-queue joins wait without
// admission until the opening, whatever the room; at the opening they are
// admitted in the order recomputed from the revealed seed, then the joins
// stamped after the opening in stamp order. A pre-queue join that reaches
// Redis after the opening still lands at its drawn place.
func TestDropAdmitsTheDrawnOrderAtTheOpening(t *testing.T) {
	s, c := newStore(t)
	s = withFastTrack(t, s, 100)
	ctx := context.Background()
	ev := testenv.EventID(t)
	seed := putDrop(t, s, ev, 1000)

	var pre []queue.Message
	var preUsers []string
	for i := range 60 {
		u := fmt.Sprintf("pre-%02d", i)
		preUsers = append(preUsers, u)
		pre = append(pre, msg(queue.OpJoin, ev, u, opens-60_000+int64(i)*100))
	}
	late := pre[len(pre)-1] // stamped before the opening, delivered after it
	if r := ingest(t, s, opens-1000, pre[:len(pre)-1]...); r.Joined != 59 || r.Admitted != 0 {
		t.Fatalf("pre-queue ingest %+v, want 59 joined and nobody admitted by the fast track", r)
	}
	if r := tick(t, s, ev, opens-1, 100); len(r.Admitted) != 0 {
		t.Fatalf("a tick a millisecond before the opening admitted %v", r.Admitted)
	}
	b, err := s.Status(ctx, ev, []string{"pre-00"}, opens-1)
	if err != nil || b.Places[0].Rank != queue.RankPrequeue || !b.Places[0].InLine() || b.Places[0].Drawn != 0 || b.Total != 59 {
		t.Fatalf("status before the opening: %+v, %v: in line, but no position and no drawn place yet", b, err)
	}

	// After the opening: three later joins, then the late pre-queue join.
	post := []queue.Message{msg(queue.OpJoin, ev, "post-a", opens+10), msg(queue.OpJoin, ev, "post-b", opens+20), msg(queue.OpJoin, ev, "post-c", opens+30)}
	if r := ingest(t, withFastTrack(t, s, 0), opens+100, post[2], post[0], post[1]); r.Joined != 3 {
		t.Fatalf("post-opening ingest %+v", r)
	}
	if r := ingest(t, withFastTrack(t, s, 0), opens+200, late); r.Joined != 1 {
		t.Fatalf("late pre-queue join %+v", r)
	}

	want := append(testdraw.Order(t, seed.Hex(), preUsers), "post-a", "post-b", "post-c")
	if got := users(line(t, c, ev)); !slices.Equal(got, want) {
		t.Fatalf("line after the opening\n got %v\nwant %v", got, want)
	}
	drawnPlace := slices.Index(want, late.UserID) + 1
	b, err = s.Status(ctx, ev, []string{late.UserID, "post-a"}, opens+300)
	if err != nil || b.Places[0].Drawn != int64(drawnPlace) || b.Places[0].Rank != int64(drawnPlace-1) || b.Places[1].Drawn != 0 {
		t.Fatalf("status of the late join %+v, %v: want drawn place %d", b, err, drawnPlace)
	}
	r := tick(t, s, ev, opens+400, 100)
	if !slices.Equal(r.Admitted, want) {
		t.Fatalf("admitted at the opening\n got %v\nwant %v", r.Admitted, want)
	}
	order, err := s.DrawOrder(ctx, ev)
	if err != nil || !slices.Equal(order, want[:60]) {
		t.Fatalf("draw order %v, %v", order, err)
	}
	if err := draw.Verify(seed, seed.Commitment(), preUsers, order); err != nil {
		t.Fatalf("the stored order does not verify: %v", err)
	}

	// A replayed pre-queue join of an admitted user queues nobody again.
	if r := ingest(t, s, opens+500, pre[0], late); r.Joined != 0 || r.Ignored != 2 {
		t.Fatalf("replayed pre-queue joins %+v, want both ignored", r)
	}
	// A new join after a release does queue again, behind the line.
	if _, _, err := s.Release(ctx, ev, "pre-00", opens+600); err != nil {
		t.Fatal(err)
	}
	if r := ingest(t, withFastTrack(t, s, 0), opens+700, msg(queue.OpJoin, ev, "pre-00", opens+650)); r.Joined != 1 {
		t.Fatalf("rejoin after release %+v", r)
	}
}

// TestDropStatusRevealsTheSeedAtTheOpening: the commitment is public from
// scheduling on; the seed only from the opening on, and it hashes to the
// commitment.
func TestDropStatusRevealsTheSeedAtTheOpening(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	seed := putDrop(t, s, ev, 10)
	ingest(t, s, opens-5000, msg(queue.OpJoin, ev, "a", opens-5000), msg(queue.OpJoin, ev, "b", opens-4000))

	before, err := s.EventStatus(ctx, ev, opens-1)
	if err != nil {
		t.Fatal(err)
	}
	if before.Phase != queue.PhasePrequeue || before.Draw == nil || before.Draw.Seed != "" || before.Draw.PrequeueSize != 2 {
		t.Fatalf("before the opening: phase %s, draw %+v", before.Phase, before.Draw)
	}
	after, err := s.EventStatus(ctx, ev, opens)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hex.DecodeString(after.Draw.Seed)
	if err != nil {
		t.Fatalf("revealed seed %q: %v", after.Draw.Seed, err)
	}
	sum := sha256.Sum256(raw)
	if after.Phase != queue.PhaseOpen || hex.EncodeToString(sum[:]) != before.Draw.Commitment || after.Draw.Seed != seed.Hex() {
		t.Fatalf("after the opening: phase %s, draw %+v; the commitment before was %s", after.Phase, after.Draw, before.Draw.Commitment)
	}

	// Writing the event again keeps the seed: its commitment was published.
	other, _ := draw.NewSeed()
	e := after.Event
	e.Seed = &other
	if _, err := s.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.EventStatus(ctx, ev, opens); again.Draw.Commitment != before.Draw.Commitment {
		t.Fatal("a second PutEvent replaced the draw's seed")
	}
}

// TestIngestFollowsADrawThatChanged: a store that cached an event's draw
// (none) ingests correctly after the event is deleted and made again as a
// drop, with another seed.
func TestIngestFollowsADrawThatChanged(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	mustPut(t, s, ev)
	ingest(t, s, 10, msg(queue.OpJoin, ev, "x", 5)) // caches "no draw"
	if err := s.DeleteEvent(ctx, ev, 100); err != nil {
		t.Fatal(err)
	}
	if err := s.ClearTombstone(ctx, ev); err != nil { // the topic is deleted
		t.Fatal(err)
	}
	seed := putDrop(t, s, ev, 10)
	if r := ingest(t, s, opens-100, msg(queue.OpJoin, ev, "y", opens-200)); r.Joined != 1 {
		t.Fatalf("ingest after the event was made again: %+v", r)
	}
	zs := line(t, c, ev)
	if len(zs) != 1 || int64(zs[0].Score) != draw.Score(seed, "y") {
		t.Fatalf("line %v, want y at its drawn score %d", zs, draw.Score(seed, "y"))
	}
	if err := s.DeleteEvent(ctx, ev, opens); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, redisstore.PrequeueKey(ev)).Result(); n != 0 {
		t.Fatal("deleting the event left its pre-queue list")
	}
}

// TestInversionsLeaveOutWhoIsNoLongerWaiting: an overtaken join counts an
// inversion only when its user still waits after the step: not when the
// fast track admits them in the same step, nor when a later message of the
// batch takes them out of the line.
func TestInversionsLeaveOutWhoIsNoLongerWaiting(t *testing.T) {
	base, _ := newStore(t)
	s := withFastTrack(t, base, 10)
	ev := testenv.EventID(t)
	if _, err := s.PutEvent(context.Background(), queue.Event{ID: ev, Capacity: 2, StaySeconds: 60, State: queue.StateOpen, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if r := ingest(t, s, 2100, msg(queue.OpJoin, ev, "late", 2000)); r.Admitted != 1 {
		t.Fatalf("first join: %+v, want it admitted", r)
	}
	// A plain batch behind an admission: a takes the last slot, b waits.
	if r := ingest(t, s, 2200, msg(queue.OpJoin, ev, "a", 1000), msg(queue.OpJoin, ev, "b", 1001)); r.Admitted != 1 || r.Inversions != 1 {
		t.Fatalf("plain batch: %+v, want 1 admitted and 1 inversion", r)
	}
	// The general step (c is listed twice): c leaves again, d waits.
	r := ingest(t, s, 2300, msg(queue.OpJoin, ev, "c", 1002), msg(queue.OpLeave, ev, "c", 1004), msg(queue.OpJoin, ev, "d", 1003))
	if r.Joined != 2 || r.Left != 1 || r.Admitted != 0 || r.Inversions != 1 {
		t.Fatalf("batch with a leave: %+v, want 2 joined, 1 left, 1 inversion", r)
	}
	st, err := s.EventStatus(context.Background(), ev, 2400)
	if err != nil {
		t.Fatal(err)
	}
	if st.Fairness.Inversions != 2 {
		t.Errorf("%d inversions in the stats, want 2", st.Fairness.Inversions)
	}
}

// TestInversionsCountOvertakenJoins: a join held back (another partition's
// lag) while a later one is admitted counts one inversion when it then has
// to wait; joins arriving in order count none. The ingest delay is counted
// in its power-of-two bucket.
func TestInversionsCountOvertakenJoins(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	inOrder, heldBack := testenv.EventID(t)+"-a", testenv.EventID(t)+"-b"
	for _, ev := range []string{inOrder, heldBack} {
		if _, err := s.PutEvent(ctx, queue.Event{ID: ev, Capacity: 1, StaySeconds: 60, State: queue.StateOpen, Partitions: 2}); err != nil {
			t.Fatal(err)
		}
	}
	// In order: first then second; the first is admitted, the second waits.
	ingest(t, s, 1100, msg(queue.OpJoin, inOrder, "first", 1000), msg(queue.OpJoin, inOrder, "second", 1001))
	tick(t, s, inOrder, 1200, 10)
	// Held back: the second arrives and is admitted first, the first waits.
	ingest(t, s, 1100, msg(queue.OpJoin, heldBack, "second", 1001))
	tick(t, s, heldBack, 1200, 10)
	if r := ingest(t, s, 1300, msg(queue.OpJoin, heldBack, "first", 1000)); r.Inversions != 1 {
		t.Fatalf("held-back join: %+v, want 1 inversion", r)
	}
	for ev, want := range map[string]int64{inOrder: 0, heldBack: 1} {
		st, err := s.EventStatus(ctx, ev, 1400)
		if err != nil {
			t.Fatal(err)
		}
		if st.Fairness.Inversions != want {
			t.Errorf("%s: %d inversions, want %d", ev, st.Fairness.Inversions, want)
		}
	}
	st, _ := s.EventStatus(ctx, heldBack, 1400)
	// Delays 99 ms and 300 ms: buckets of at most 128 and 512 ms.
	if d := st.Fairness.IngestDelayMs; d.Count != 2 || d.P50 != 128 || d.P99 != 512 {
		t.Errorf("ingest delay %+v, want 2 counted, p50 128 ms, p99 512 ms", d)
	}
}

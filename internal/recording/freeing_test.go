package recording_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// replayed folds a recorder's log the way a rebuild does after Redis was
// lost, and returns the holders it restores at nowMs.
func replayed(t *testing.T, ev string, capacity, staySeconds int, log []queue.Message, nowMs int64) map[string]int64 {
	t.Helper()
	r := queue.NewReplay()
	r.Apply(queue.NewConfigRecord(queue.Event{ID: ev, Capacity: capacity, StaySeconds: staySeconds, State: queue.StateOpen, Partitions: 1}, 1))
	for _, m := range log {
		r.Apply(m)
	}
	st, ok := r.State(nowMs)
	if !ok {
		t.Fatal("no config in the replay")
	}
	return st.Holders
}

// released is the scene of these tests: an event of one slot held 60 s, u0
// and u1 in line, u0 admitted at t0 (recorded), then the broker down or not,
// and u0's release at t0 + 1 s through a store with a recorder and the fast
// track.
func released(t *testing.T, down bool) (s *redisstore.Store, rs *recording.Store, c *redis.Client, rec *broker, ev string) {
	t.Helper()
	s, c = newStore(t)
	ev = testenv.EventID(t)
	rec = &broker{}
	rs = recording.New(mustNew(t, c, redisstore.Options{FastTrack: 10}), rec, testenv.Logger(t))
	putLine(t, s, ev, 1, 60, 2)
	if r := tick(t, rs, ev, t0, 10); !slices.Equal(r.Admitted, []string{"u0"}) {
		t.Fatalf("first tick %+v, want u0 admitted", r)
	}
	rec.setDown(down)
	if ok, _, err := rs.Release(context.Background(), ev, "u0", t0+1_000); err != nil || !ok {
		t.Fatalf("release of u0: %v %v", ok, err)
	}
	return s, rs, c, rec, ev
}

const t0 = int64(1_000_000)

// ops lists the log's records as "op user".
func ops(rec *broker) []string {
	var out []string
	for _, m := range rec.records() {
		out = append(out, string(m.Op)+" "+m.UserID)
	}
	return out
}

// rebuild writes back the state the log msgs (after the event's
// configuration) describes at nowMs, as waitq-rebuild does.
func rebuild(t *testing.T, s *redisstore.Store, ev string, e queue.Event, msgs []queue.Message, nowMs int64) {
	t.Helper()
	ctx := context.Background()
	r := queue.NewReplay()
	r.Apply(queue.NewConfigRecord(e, 1))
	for _, m := range msgs {
		r.Apply(m)
	}
	st, _ := r.State(nowMs)
	if err := s.BeginRebuild(ctx, ev, nowMs); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteRebuilt(ctx, st, nowMs); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRebuild(ctx, ev); err != nil {
		t.Fatal(err)
	}
}

// TestALostReleaseRecordHandsTheSlotOnOnlyOnceWritten is the campaign's
// finding: a release whose record could not be written (the releasing
// gateway's broker cut off) freed the slot at once, the fast track or a
// tick gave it to the next user, whose admit record reached the log; a
// rebuild after a loss of Redis then restored both holders, over capacity.
// Now the slot stays counted until the release record is in the log: the
// log never holds more holders than the capacity, whenever Redis is lost.
func TestALostReleaseRecordHandsTheSlotOnOnlyOnceWritten(t *testing.T) {
	s, rs, _, rec, ev := released(t, true)
	ctx := context.Background()
	for _, at := range []int64{1_001, 2_000, 5_000, 30_000} {
		r := tick(t, rs, ev, t0+at, 10)
		if len(r.Admitted) != 0 || r.Holders != 0 || r.Waiting != 1 {
			t.Fatalf("tick at t+%d ms while the release record is not written: %+v; want nobody admitted", at, r)
		}
		if got := replayed(t, ev, 1, 60, rec.records(), t0+at); len(got) > 1 {
			t.Fatalf("a rebuild at t+%d ms would restore %v: over the capacity of 1", at, got)
		}
	}
	b, err := s.Status(ctx, ev, []string{"u0", "u1"}, t0+30_000)
	if err != nil {
		t.Fatal(err)
	}
	if b.Places[0].StayUntil > 0 || b.Places[1].Rank != 0 {
		t.Errorf("places while the release is unrecorded %+v: u0 released, u1 first in line", b.Places)
	}

	// The broker answers: a tick writes the release again once its last
	// try (t+30 s) is RecordGrace old, and frees the slot; the next admits
	// u1, after the release in the log.
	rec.setDown(false)
	for _, at := range []int64{31_000, 32_500} {
		if r := tick(t, rs, ev, t0+at, 10); len(r.Admitted) != 0 {
			t.Fatalf("tick at t+%d ms admitted %v before the release was in the log", at, r.Admitted)
		}
	}
	if r := tick(t, rs, ev, t0+33_000, 10); !slices.Equal(r.Admitted, []string{"u1"}) {
		t.Fatalf("tick after the release was written: %+v, want u1 admitted", r)
	}
	for _, m := range rec.records() {
		if m.Op == queue.OpRelease && m.ServedMark == 0 {
			t.Errorf("release record %+v names no admission", m)
		}
	}
	if got, want := ops(rec), []string{"admit u0", "release u0", "admit u1"}; !slices.Equal(got, want) {
		t.Errorf("log %v, want %v", got, want)
	}
	if got, want := replayed(t, ev, 1, 60, rec.records(), t0+34_000), map[string]int64{"u1": t0 + 93_000}; !maps.Equal(got, want) {
		t.Errorf("a rebuild now restores %v, want %v", got, want)
	}
}

// TestAReleaseRecordedHandsTheSlotOnAtOnce: with the broker answering, the
// fast track still gives the freed slot to the next user in the release's
// call, after the release record.
func TestAReleaseRecordedHandsTheSlotOnAtOnce(t *testing.T) {
	s, _, c, rec, ev := released(t, false)
	ctx := context.Background()
	b, err := s.Status(ctx, ev, []string{"u1"}, t0+1_000)
	if err != nil {
		t.Fatal(err)
	}
	if want := (queue.Place{Rank: -1, StayUntil: t0 + 61_000}); b.Places[0] != want {
		t.Errorf("u1 after the release: %+v, want told of a hold until %d", b.Places[0], want.StayUntil)
	}
	if got, want := ops(rec), []string{"admit u0", "release u0", "admit u1"}; !slices.Equal(got, want) {
		t.Errorf("log %v, want %v", got, want)
	}
	if n, err := c.ZCard(ctx, redisstore.FreeingKey(ev)).Result(); err != nil || n != 0 {
		t.Errorf("freeing holds %d (%v) after the record was written, want 0", n, err)
	}
}

// TestARebuildKeepsALiveReleaseWhoseRecordIsMissing: a rebuild run while a
// release record is still unwritten (Redis kept, the log read lacks it)
// does not give the user back the slot they released, and the slot stays
// counted until the record is written.
func TestARebuildKeepsALiveReleaseWhoseRecordIsMissing(t *testing.T) {
	s, rs, c, rec, ev := released(t, true)
	ctx := context.Background()
	e, err := s.Event(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	// The rebuild reads the log (u1's join, admit u0, no release) and
	// writes it back.
	rebuild(t, s, ev, e, append([]queue.Message{msg(queue.OpJoin, ev, "u1", 2)}, rec.records()...), t0+2_000)
	if n := c.ZCard(ctx, redisstore.HoldersKey(ev)).Val(); n != 0 {
		t.Errorf("%d holders after the rebuild, want 0: u0 released the slot", n)
	}
	if res := tick(t, rs, ev, t0+3_000, 10); len(res.Admitted) != 0 {
		t.Errorf("admitted %v while u0's release is not in the log", res.Admitted)
	}
	rec.setDown(false)
	tick(t, rs, ev, t0+6_000, 10) // writes the release
	if res := tick(t, rs, ev, t0+6_100, 10); !slices.Equal(res.Admitted, []string{"u1"}) {
		t.Errorf("once the release is written: %+v, want u1 admitted", res)
	}
}

// TestARebuildKeepsTheVisits: the visits are in the log (a join's visit),
// so a rebuild writes them back, and a try of an admitted visit sent after
// its admission still queues nobody after Redis was lost and rebuilt; a
// new visit queues.
func TestARebuildKeepsTheVisits(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	rec := &broker{}
	rs := recording.New(mustNew(t, c, redisstore.Options{}), rec, testenv.Logger(t))
	putLine(t, s, ev, 1, 10, 0)
	visit := func(ts int64, v string) queue.Message {
		m := msg(queue.OpJoin, ev, "u0", ts)
		m.JoinKey = v
		return m
	}
	first := visit(100, "visit-a")
	if res, err := rs.Ingest(ctx, []queue.Message{first}, 200); err != nil || res.Joined != 1 {
		t.Fatalf("the first try: %+v %v", res, err)
	}
	tick(t, rs, ev, 1000, 10)
	if ok, _, err := rs.Release(ctx, ev, "u0", 1500); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}

	// Redis is lost; the rebuild folds the log: the join, then the records.
	e, err := s.Event(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	rebuild(t, s, ev, e, append([]queue.Message{first}, rec.records()...), 1600)
	if got := c.HGet(ctx, redisstore.JoinKeysKey(ev), "u0").Val(); got != redisstore.JoinKeyDigest("visit-a") {
		t.Fatalf("visit after the rebuild %q, want the digest of visit-a", got)
	}
	res, err := rs.Ingest(ctx, []queue.Message{visit(1200, "visit-a")}, 2000)
	if err != nil || res.Joined != 0 || res.Ignored != 1 {
		t.Fatalf("after the rebuild the retry of the admitted visit: %+v %v; want it ignored", res, err)
	}
	if res, err := rs.Ingest(ctx, []queue.Message{visit(2600, "visit-b")}, 3000); err != nil || res.Joined != 1 {
		t.Fatalf("a new visit after the rebuild: %+v %v", res, err)
	}
}

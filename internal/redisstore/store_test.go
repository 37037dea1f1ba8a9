package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

var newStore, mustNew = testsys.NewStore, testsys.MustStore

// withFastTrack returns a Store on s's client whose writes admit up to
// batch users at once.
func withFastTrack(tb testing.TB, s *redisstore.Store, batch int) *redisstore.Store {
	tb.Helper()
	return mustNew(tb, s.Client(), redisstore.Options{FastTrack: batch})
}

func mustPut(t *testing.T, s *redisstore.Store, id string) {
	t.Helper()
	if _, err := s.PutEvent(context.Background(), queue.Event{ID: id, Capacity: 2, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
}

func msg(op queue.Op, ev, user string, ts int64) queue.Message {
	return queue.Message{V: 1, Op: op, EventID: ev, UserID: user, TS: ts, ID: "x"}
}

func line(t *testing.T, c *redis.Client, ev string) []redis.Z {
	t.Helper()
	zs, err := c.ZRangeWithScores(context.Background(), redisstore.WaitingKey(ev), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return zs
}

func TestIngestSemantics(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	mustPut(t, s, ev)
	const now = 1_000_000
	// "holder" holds an unexpired slot, "expired" held one that ran out;
	// both were admitted (served) before their joins below were stamped,
	// as every holder has a served mark.
	c.ZAdd(ctx, redisstore.HoldersKey(ev), redis.Z{Member: "holder", Score: now + 1000}, redis.Z{Member: "expired", Score: now - 1})
	c.ZAdd(ctx, redisstore.ServedKey(ev), redis.Z{Member: "holder", Score: 0}, redis.Z{Member: "expired", Score: 25})

	res, err := s.Ingest(ctx, []queue.Message{
		msg(queue.OpJoin, ev, "b", 20),
		msg(queue.OpJoin, ev, "a", 20), // tie with b: user id decides
		msg(queue.OpJoin, ev, "c", 10),
		msg(queue.OpJoin, ev, "b", 5), // repeated join: first place stands
		msg(queue.OpJoin, ev, "holder", 1),
		msg(queue.OpJoin, ev, "expired", 30),
		msg(queue.OpJoin, ev, "d", 40),
		msg(queue.OpLeave, ev, "d", 41),
		msg(queue.OpLeave, ev, "never", 42),
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := queue.IngestResult{Joined: 5, Left: 1, Ignored: 3}
	if !(res.Joined == want.Joined && res.Left == want.Left && res.Ignored == want.Ignored && len(res.UnknownEvents) == 0) {
		t.Errorf("result %+v, want %+v", res, want)
	}
	got := line(t, c, ev)
	wantLine := []redis.Z{{Score: 10, Member: "c"}, {Score: 20, Member: "a"}, {Score: 20, Member: "b"}, {Score: 30, Member: "expired"}}
	if !slices.Equal(got, wantLine) {
		t.Fatalf("line %v, want %v", got, wantLine)
	}

	// Replaying the same batch ends in the same state.
	if _, err := s.Ingest(ctx, []queue.Message{msg(queue.OpJoin, ev, "d", 40), msg(queue.OpLeave, ev, "d", 41), msg(queue.OpJoin, ev, "b", 5)}, now); err != nil {
		t.Fatal(err)
	}
	if got := line(t, c, ev); !slices.Equal(got, wantLine) {
		t.Fatalf("after replay: line %v, want %v", got, wantLine)
	}
}

func TestIngestUnknownEventWritesNothing(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	known := testenv.EventID(t)
	mustPut(t, s, known)
	ghost := known + "-ghost"
	res, err := s.Ingest(ctx, []queue.Message{msg(queue.OpJoin, ghost, "u", 1), msg(queue.OpJoin, known, "v", 2)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.UnknownEvents, []string{ghost}) || res.Joined != 1 {
		t.Fatalf("result %+v", res)
	}
	if n := c.Exists(ctx, redisstore.WaitingKey(ghost)).Val(); n != 0 {
		t.Fatal("a line was created for an unknown event")
	}
}

func TestScriptsSurviveAScriptFlush(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	mustPut(t, s, ev)
	if _, err := s.Ingest(ctx, []queue.Message{msg(queue.OpJoin, ev, "a", 1)}, 0); err != nil {
		t.Fatal(err)
	}
	// What a Redis restart does to the script cache.
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ingest(ctx, []queue.Message{msg(queue.OpJoin, ev, "b", 2)}, 0); err != nil {
		t.Fatalf("ingest after SCRIPT FLUSH: %v", err)
	}
	c.ScriptFlush(ctx)
	if err := s.DeleteEvent(ctx, ev, 0); err != nil {
		t.Fatalf("delete after SCRIPT FLUSH: %v", err)
	}
}

func TestEventLifecycle(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	e := queue.Event{ID: ev, Capacity: 3, StaySeconds: 90, State: queue.StateOpen, Partitions: 4}
	if created, err := s.PutEvent(ctx, e); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	e.Capacity = 5
	if created, err := s.PutEvent(ctx, e); err != nil || created {
		t.Fatalf("update: %v %v", created, err)
	}
	if got, err := s.Event(ctx, ev); err != nil || got != e {
		t.Fatalf("Event = %+v, %v", got, err)
	}
	if ids, err := s.EventIDs(ctx); err != nil || !slices.Equal(ids, []string{ev}) {
		t.Fatalf("EventIDs = %v, %v", ids, err)
	}
	now := time.Now().UnixMilli()
	c.ZAdd(ctx, redisstore.WaitingKey(ev), redis.Z{Member: "w", Score: 1})
	c.ZAdd(ctx, redisstore.HoldersKey(ev), redis.Z{Member: "h", Score: float64(now + 5000)}, redis.Z{Member: "gone", Score: float64(now - 5000)})
	c.HSet(ctx, redisstore.StatsKey(ev), "admittedTotal", 7)
	c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "w", Score: 1})
	c.ZAdd(ctx, redisstore.ServedKey(ev), redis.Z{Member: "x", Score: 1})
	st, err := s.EventStatus(ctx, ev, now)
	if err != nil || st.Waiting != 1 || st.Holders != 1 || st.AdmittedTotal != 7 || st.Event != e {
		t.Fatalf("EventStatus = %+v, %v", st, err)
	}
	if err := s.DeleteEvent(ctx, ev, now); queue.ErrorCode(err) != queue.CodeSlotsInUse {
		t.Fatalf("delete with a holder: %v", err)
	}
	if _, err := s.Event(ctx, ev); err != nil {
		t.Fatalf("refused delete removed the event: %v", err)
	}
	if err := s.DeleteEvent(ctx, ev, now+5000); err != nil {
		t.Fatalf("delete after the hold expired: %v", err)
	}
	if _, err := s.Event(ctx, ev); !errors.Is(err, queue.ErrEventNotFound) {
		t.Fatalf("Event after delete: %v", err)
	}
	if n := c.Exists(ctx, redisstore.WaitingKey(ev), redisstore.HoldersKey(ev), redisstore.StatsKey(ev), redisstore.ConfigKey(ev),
		redisstore.SeenKey(ev), redisstore.ServedKey(ev)).Val(); n != 0 {
		t.Fatalf("%d keys left", n)
	}
	if ids, _ := s.EventIDs(ctx); len(ids) != 0 {
		t.Fatalf("still registered: %v", ids)
	}
	// The admin DELETE deletes the topic, then the tombstone
	// (TestDeleteLeavesATombstone).
	if err := s.ClearTombstone(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteEvent(ctx, ev, now); !errors.Is(err, queue.ErrEventNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

// TestDeleteLeavesATombstone: DeleteEvent leaves the event's tombstone in
// the step that removes its keys; while it stands a DeleteEvent again is
// no error (the log is still to delete), no event of the id is created nor
// rebuilt, and an update is not concerned; ClearTombstone ends it.
func TestDeleteLeavesATombstone(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	e := queue.Event{ID: ev, Capacity: 1, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}
	if _, err := s.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteEvent(ctx, ev, 1000); err != nil {
		t.Fatal(err)
	}
	if at, err := c.Get(ctx, redisstore.TombstoneKey(ev)).Result(); err != nil || at != "1000" {
		t.Fatalf("tombstone %q (%v), want the delete's time 1000", at, err)
	}
	if err := s.DeleteEvent(ctx, ev, 2000); err != nil {
		t.Fatalf("delete of a tombstoned id: %v, want nil (its log is still to delete)", err)
	}
	if _, err := s.PutEvent(ctx, e); !errors.Is(err, queue.ErrLogNotDeleted) {
		t.Fatalf("create over the tombstone: %v, want ErrLogNotDeleted", err)
	}
	if err := s.BeginRebuild(ctx, ev, 3000); !errors.Is(err, queue.ErrLogNotDeleted) {
		t.Fatalf("rebuild of a tombstoned id: %v, want ErrLogNotDeleted", err)
	}
	if n := c.Exists(ctx, redisstore.ConfigKey(ev)).Val(); n != 0 {
		t.Fatal("a refused create or rebuild wrote the configuration")
	}
	if err := s.ClearTombstone(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if dead, err := s.Tombstoned(ctx, ev); err != nil || dead {
		t.Fatalf("tombstoned %v (%v) after ClearTombstone", dead, err)
	}
	if created, err := s.PutEvent(ctx, e); err != nil || !created {
		t.Fatalf("create after the tombstone: created %v, %v", created, err)
	}
}

func TestCorruptConfigIsAnError(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	c.HSet(ctx, redisstore.ConfigKey(ev), "capacity", "lots", "holdSeconds", "60", "partitions", "1", "state", "open")
	if _, err := s.Event(ctx, ev); err == nil || errors.Is(err, queue.ErrEventNotFound) {
		t.Fatalf("corrupt config read as %v", err)
	}
}

func TestKeysShareTheEventsClusterSlot(t *testing.T) {
	keys := []string{redisstore.WaitingKey("e1"), redisstore.HoldersKey("e1"), redisstore.ConfigKey("e1"), redisstore.StatsKey("e1"),
		redisstore.SeenKey("e1"), redisstore.ServedKey("e1"), redisstore.SeriesKey("e1")}
	for _, k := range keys {
		start := len("waitq:{")
		if k[:start] != "waitq:{" || k[start:start+3] != "e1}" {
			t.Errorf("key %q does not carry the hash tag {e1}", k)
		}
	}
}

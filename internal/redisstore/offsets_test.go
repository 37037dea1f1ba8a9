package redisstore_test

import (
	"context"
	"testing"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

func at(m queue.Message, partition int, offset int64) queue.LogMessage {
	return queue.LogMessage{Message: m, Partition: partition, Offset: offset}
}

// A member stuck in backoff whose partition moved writes its old batch
// late: the join it holds was applied by the new member, and so was the
// user's leave after it. The late join must not queue the user again.
func TestStaleMembersLateBatchChangesNothing(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	mustPut(t, s, ev)
	stale := []queue.LogMessage{at(msg(queue.OpJoin, ev, "u1", 100), 0, 1)}
	// The new member: join@1, then leave@2.
	if _, err := s.IngestLog(ctx, stale, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IngestLog(ctx, []queue.LogMessage{at(msg(queue.OpLeave, ev, "u1", 200), 0, 2)}, 1000); err != nil {
		t.Fatal(err)
	}
	// The stale member's late write of join@1.
	res, err := s.IngestLog(ctx, stale, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if zs := line(t, c, ev); len(zs) != 0 {
		t.Fatalf("line %v after a stale join, want the user who left out of it", zs)
	}
	if res.Joined != 0 || res.Ignored != 1 {
		t.Fatalf("stale batch: %+v, want 1 ignored, nothing joined", res)
	}
	if m := c.HGet(ctx, redisstore.OffsetsKey(ev), "0").Val(); m != "2" {
		t.Fatalf("mark of partition 0 %q, want 2", m)
	}
}

// A batch applied twice with the same offsets (a redelivery after a crash
// before the commit) changes nothing the second time, even where the
// messages alone would (a leave then a join again); records raise the mark;
// messages without an offset are applied as before.
func TestReplayedBatchChangesNothing(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	mustPut(t, s, ev)
	batch := []queue.LogMessage{
		at(msg(queue.OpJoin, ev, "u1", 100), 0, 5),
		at(msg(queue.OpJoin, ev, "u2", 110), 1, 7),
		at(msg(queue.OpLeave, ev, "u1", 120), 0, 6),
		at(msg(queue.OpAdmit, ev, "u9", 130), 1, 8),
	}
	first, err := s.IngestLog(ctx, batch, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if first.Joined != 2 || first.Left != 1 || first.Ignored != 1 {
		t.Fatalf("first: %+v, want 2 joined, 1 left, the record ignored", first)
	}
	// u1 joins again later; then the old batch is redelivered.
	if _, err := s.IngestLog(ctx, []queue.LogMessage{at(msg(queue.OpJoin, ev, "u1", 300), 0, 9)}, 1000); err != nil {
		t.Fatal(err)
	}
	before := line(t, c, ev)
	again, err := s.IngestLog(ctx, batch, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if again.Joined != 0 || again.Left != 0 || again.Ignored != 4 {
		t.Fatalf("replay: %+v, want all 4 ignored", again)
	}
	if after := line(t, c, ev); len(after) != len(before) || len(after) != 2 {
		t.Fatalf("line %v after the replay, want %v", after, before)
	}
	marks := c.HGetAll(ctx, redisstore.OffsetsKey(ev)).Val()
	if marks["0"] != "9" || marks["1"] != "8" {
		t.Fatalf("marks %v, want 0:9 1:8 (the record raised partition 1's)", marks)
	}
	// Without a place in the log, a message is applied as before.
	if res, err := s.Ingest(ctx, []queue.Message{msg(queue.OpLeave, ev, "u1", 400)}, 3000); err != nil || res.Left != 1 {
		t.Fatalf("unplaced leave: %+v, %v", res, err)
	}
	// Deleting the event removes its marks.
	if err := s.DeleteEvent(ctx, ev, 4000); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, redisstore.OffsetsKey(ev)).Val(); n != 0 {
		t.Fatal("the offsets outlived the event's delete")
	}
}

// A rebuild sets the marks to the ends it read: what the consumer
// redelivers from before them is folded in already.
func TestRebuildSetsTheMarks(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	mustPut(t, s, ev)
	if _, err := s.IngestLog(ctx, []queue.LogMessage{at(msg(queue.OpJoin, ev, "u1", 100), 2, 40)}, 1000); err != nil {
		t.Fatal(err)
	}
	e, err := s.Event(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRebuild(ctx, ev, 2000); err != nil {
		t.Fatal(err)
	}
	st := queue.Rebuilt{Event: e, ConfiguredAt: 1, Ends: map[int]int64{0: 3, 1: 0}}
	if err := s.WriteRebuilt(ctx, st, 2000); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRebuild(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if marks := c.HGetAll(ctx, redisstore.OffsetsKey(ev)).Val(); len(marks) != 1 || marks["0"] != "2" {
		t.Fatalf("marks %v after the rebuild, want only 0:2", marks)
	}
	res, err := s.IngestLog(ctx, []queue.LogMessage{
		at(msg(queue.OpJoin, ev, "u2", 110), 0, 2), // folded already
		at(msg(queue.OpJoin, ev, "u3", 120), 0, 3), // past the end read
		at(msg(queue.OpJoin, ev, "u4", 130), 2, 0), // partition 2 ended at 0
	}, 3000)
	if err != nil {
		t.Fatal(err)
	}
	if res.Joined != 2 || res.Ignored != 1 {
		t.Fatalf("after the rebuild: %+v, want u3 and u4 joined, u2 ignored", res)
	}
}

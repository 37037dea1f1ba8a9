package queue_test

import (
	"maps"
	"testing"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/draw"
)

func record(op queue.Op, user string, ts int64, set func(*queue.Message)) queue.Message {
	m := queue.NewRecord(op, "e1", user, ts)
	if set != nil {
		set(&m)
	}
	return m
}

// fold applies msgs in order and returns the state at nowMs.
func fold(t *testing.T, nowMs int64, msgs ...queue.Message) queue.Rebuilt {
	t.Helper()
	r := queue.NewReplay()
	for _, m := range msgs {
		r.Apply(m)
	}
	st, ok := r.State(nowMs)
	if !ok {
		t.Fatal("no config")
	}
	return st
}

func join(user string, ts int64) queue.Message {
	return queue.Message{V: queue.MessageVersion, Op: queue.OpJoin, EventID: "e1", UserID: user, TS: ts}
}

func admitRec(user string, ts, expires, servedMark int64) queue.Message {
	return record(queue.OpAdmit, user, ts, func(m *queue.Message) { m.ExpiresAt, m.Score, m.ServedMark = expires, servedMark, servedMark })
}

// TestReplayFoldsTheLog: each kind of message does to the fold what it did
// live, and the fold of a log applied twice is the fold of the log.
func TestReplayFoldsTheLog(t *testing.T) {
	ev := queue.Event{ID: "e1", Capacity: 5, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}
	log := []queue.Message{
		queue.NewConfigRecord(ev, 1),
		join("waits", 10), join("waits", 11), // the first place stands
		join("left", 12), {V: 1, Op: queue.OpLeave, EventID: "e1", UserID: "left", TS: 13},
		join("holds", 14), admitRec("holds", 20, 5000, 14), join("holds", 30), // a join while holding: ignored
		join("released", 15), admitRec("released", 20, 5000, 15), record(queue.OpRelease, "released", 40, nil),
		join("replayed", 16), admitRec("replayed", 20, 500, 16), record(queue.OpExpire, "replayed", 600, nil), join("replayed", 16), // served: ignored
		join("back", 17), admitRec("back", 20, 500, 17), admitRec("back", 20, 500, 17), record(queue.OpExpire, "back", 600, nil), join("back", 700), // written twice, counted once; a new join queues again
		join("swept", 18), record(queue.OpSweep, "swept", 50, func(m *queue.Message) { m.Score = 18 }),
		join("sweptlate", 19), record(queue.OpSweep, "sweptlate", 50, func(m *queue.Message) { m.Score = 3 }), // another place: stays
		{V: 2, Op: "teleport", EventID: "e1", UserID: "x", TS: 1},
	}
	fold := func(times int) queue.Rebuilt {
		r := queue.NewReplay()
		for range times {
			for _, m := range log {
				r.Apply(m)
			}
		}
		st, ok := r.State(1000)
		if !ok {
			t.Fatal("no config")
		}
		return st
	}
	st := fold(1)
	if want := map[string]int64{"waits": 10, "back": 700, "sweptlate": 19}; !maps.Equal(st.Waiting, want) {
		t.Errorf("waiting %v, want %v", st.Waiting, want)
	}
	if want := map[string]int64{"holds": 5000}; !maps.Equal(st.Holders, want) {
		t.Errorf("active %v, want %v", st.Holders, want)
	}
	if want := map[string]int64{"holds": 14, "released": 15, "replayed": 16, "back": 17}; !maps.Equal(st.Served, want) {
		t.Errorf("served %v, want %v", st.Served, want)
	}
	if st.AdmittedTotal != 4 || st.AdmittedMaxScore != 17 || st.Event.Capacity != 5 {
		t.Errorf("admittedTotal %d, max score %d, capacity %d: want 4, 17, 5", st.AdmittedTotal, st.AdmittedMaxScore, st.Event.Capacity)
	}
	twice := fold(2)
	if !maps.Equal(twice.Waiting, st.Waiting) || !maps.Equal(twice.Holders, st.Holders) || !maps.Equal(twice.Served, st.Served) || twice.AdmittedTotal != st.AdmittedTotal {
		t.Errorf("the log applied twice folds to %+v, once to %+v", twice, st)
	}
	if _, ok := queue.NewReplay().State(0); ok {
		t.Error("a log without a config record gave a state")
	}
}

// TestReplayKeepsTheRenewedHold: an admission recorded twice, by its
// admitter and by a monitor tick that found it unrecorded after
// RecordGrace and gave it a whole hold from then, in either order, holds
// until the later end; once given back, a late copy does not take the slot
// again.
func TestReplayKeepsTheRenewedHold(t *testing.T) {
	ev := queue.Event{ID: "e1", Capacity: 5, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}
	r := queue.NewReplay()
	for _, m := range []queue.Message{
		queue.NewConfigRecord(ev, 1),
		join("renewed", 10), admitRec("renewed", 20, 4000, 10), admitRec("renewed", 25, 6000, 10),
		join("late", 11), admitRec("late", 20, 6000, 11), admitRec("late", 26, 4000, 11),
		join("gone", 12), admitRec("gone", 20, 4000, 12), record(queue.OpRelease, "gone", 30, nil), admitRec("gone", 31, 6000, 12),
	} {
		r.Apply(m)
	}
	st, ok := r.State(1000)
	if !ok {
		t.Fatal("no config")
	}
	if want := map[string]int64{"renewed": 6000, "late": 6000}; !maps.Equal(st.Holders, want) {
		t.Errorf("active %v, want %v", st.Holders, want)
	}
	if st.AdmittedTotal != 3 {
		t.Errorf("admittedTotal %d, want 3: each admission once", st.AdmittedTotal)
	}
}

// TestReplayDrawsTheDropsPrequeue: joins stamped before the opening take
// their drawn scores and are in the pre-queue; later ones their stamps.
// TestALateReleaseEndsOnlyItsAdmission: a release record names the
// admission it ends by its served mark. One written late (a monitor retried
// it after the writer's broker failed) lands after the same user's next
// admission, and must not end that one; a release of the current admission,
// and one of a record written before the mark was named, do.
func TestALateReleaseEndsOnlyItsAdmission(t *testing.T) {
	ev := queue.Event{ID: "e1", Capacity: 5, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}
	release := func(user string, ts, served int64) queue.Message {
		return record(queue.OpRelease, user, ts, func(m *queue.Message) { m.ServedMark = served })
	}
	st := fold(t, 1000, queue.NewConfigRecord(ev, 1),
		join("again", 10), admitRec("again", 20, 4000, 20), join("again", 30), admitRec("again", 40, 6000, 40), release("again", 41, 20),
		join("current", 11), admitRec("current", 21, 4000, 21), release("current", 22, 21),
		join("unnamed", 12), admitRec("unnamed", 22, 4000, 22), record(queue.OpRelease, "unnamed", 23, nil),
	)
	if want := map[string]int64{"again": 6000}; !maps.Equal(st.Holders, want) {
		t.Errorf("active %v, want %v: only the late release of an earlier admission ends nothing", st.Holders, want)
	}
}

func TestReplayDrawsTheDropsPrequeue(t *testing.T) {
	seed, err := draw.NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	ev := queue.Event{ID: "e1", Capacity: 1, StaySeconds: 60, State: queue.StateOpen, Partitions: 1,
		Schedule: queue.Schedule{OpensAt: 1000, PrequeueSeconds: 1}, Seed: &seed}
	r := queue.NewReplay()
	for _, m := range []queue.Message{queue.NewConfigRecord(ev, 1), join("early", 100), join("late", 2000)} {
		r.Apply(m)
	}
	st, _ := r.State(3000)
	if want := map[string]int64{"early": draw.Score(seed, "early"), "late": 2000}; !maps.Equal(st.Waiting, want) {
		t.Errorf("waiting %v, want %v", st.Waiting, want)
	}
	if want := map[string]int64{"early": draw.Score(seed, "early")}; !maps.Equal(st.Prequeue, want) {
		t.Errorf("prequeue %v, want %v", st.Prequeue, want)
	}
}

// TestReplayFoldsHolds: hold, unhold and sold records give the items held
// and sold; a release or expiry of the holder's slot ends their holds, not
// their purchases; a hold from an earlier admission is dead.
func TestReplayFoldsHolds(t *testing.T) {
	ev := queue.Event{ID: "e1", Capacity: 5, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}
	item := func(op queue.Op, user, it string, ts, exp int64) queue.Message {
		return record(op, user, ts, func(m *queue.Message) { m.Item, m.ExpiresAt = it, exp })
	}
	log := []queue.Message{
		queue.NewConfigRecord(ev, 1),
		admitRec("a", 20, 5000, 10), item(queue.OpHold, "a", "S1", 21, 5000), item(queue.OpHold, "a", "S2", 22, 5000),
		item(queue.OpUnhold, "a", "S2", 23, 0),
		admitRec("b", 20, 5000, 11), item(queue.OpHold, "b", "S3", 21, 5000), item(queue.OpSold, "b", "S3", 22, 0), item(queue.OpHold, "b", "S4", 23, 5000),
		record(queue.OpRelease, "b", 30, nil), // S4 ends with the slot, S3 stays sold
		admitRec("c", 20, 500, 12), item(queue.OpHold, "c", "S5", 21, 500), record(queue.OpExpire, "c", 600, nil),
		admitRec("c", 700, 5000, 650),                                      // admitted again: S5 stays dead
		admitRec("d", 20, 500, 13), item(queue.OpHold, "d", "S6", 21, 500), // its slot ended by now, unrecorded
	}
	for _, m := range log {
		if err := m.Validate(); err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
	}
	r := queue.NewReplay()
	for range 2 {
		for _, m := range log {
			r.Apply(m)
		}
	}
	st, _ := r.State(1000)
	if len(st.Holds) != 1 || st.Holds["S1"] != (queue.Hold{EventID: "e1", Item: "S1", UserID: "a", ExpiresAt: 5000}) {
		t.Errorf("holds %v, want S1 by a", st.Holds)
	}
	if want := map[string]string{"S3": "b"}; !maps.Equal(st.Sold, want) {
		t.Errorf("sold %v, want %v", st.Sold, want)
	}
	if st, _ := r.State(5000); len(st.Holds) != 0 || st.Sold["S3"] != "b" {
		t.Errorf("after the slots ended: holds %v, sold %v", st.Holds, st.Sold)
	}
}

// TestReplayKeepsTheVisit: as ingest.lua does, a try of the admitted visit
// sent after its admission takes no place; a new visit does; the state
// names the visit of the join that last took each user a place.
func TestReplayKeepsTheVisit(t *testing.T) {
	ev := queue.Event{ID: "e1", Capacity: 5, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}
	visit := func(user string, ts int64, v string) queue.Message {
		m := join(user, ts)
		m.JoinKey = v
		return m
	}
	st := fold(t, 100, queue.NewConfigRecord(ev, 1),
		visit("retried", 10, "a"), admitRec("retried", 20, 30, 20), visit("retried", 25, "a"),
		visit("again", 11, "b"), admitRec("again", 20, 30, 20), visit("again", 40, "c"),
	)
	if want := map[string]int64{"again": 40}; !maps.Equal(st.Waiting, want) {
		t.Errorf("waiting %v, want %v: only the new visit takes a place", st.Waiting, want)
	}
	if want := map[string]string{"retried": "a", "again": "c"}; !maps.Equal(st.JoinKeys, want) {
		t.Errorf("visits %v, want %v", st.JoinKeys, want)
	}
}

package rebuild_test

import (
	"context"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/rebuild"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// gate is a recorder whose writes wait at the gate: the admitter (or the
// admin PUT) has changed Redis and its records are on their way to the
// broker. entered is closed when the first write reaches the gate; the
// writes pass on to next once open is closed.
type gate struct {
	next    queue.Recorder
	entered chan struct{}
	open    chan struct{}
}

func newGate(next queue.Recorder) *gate {
	return &gate{next: next, entered: make(chan struct{}), open: make(chan struct{})}
}

func (g *gate) Record(ctx context.Context, msgs []queue.Message) error {
	select {
	case <-g.entered:
	default:
		close(g.entered)
	}
	<-g.open
	return g.next.Record(ctx, msgs)
}

// afterRead is a log reader that calls after once it has read the log to
// the end it took: what is written from then on lies past that end.
type afterRead struct {
	queue.LogReader
	after func()
}

func (a afterRead) ReadLog(ctx context.Context, eventID string, f func(int, int64, queue.Message)) (queue.LogStats, error) {
	st, err := a.LogReader.ReadLog(ctx, eventID, f)
	if err == nil {
		a.after()
	}
	return st, err
}

// TestRebuildKeepsAnAdmissionRecordedPastItsEnd (issue 29, defect 3): an
// admission made just before a rebuild begins, whose record the broker
// acknowledges only after the rebuild read the log's end, is never told
// during the rebuild and is not taken back by it: after the rebuild its
// user still holds the one slot (not back in line), is told once a
// monitor tick records it, and nobody else is admitted into the full
// capacity; a second rebuild, reading that record, gives the same state.
func TestRebuildKeepsAnAdmissionRecordedPastItsEnd(t *testing.T) {
	e := newEnv(t, 1)
	cons := e.sys.StartConsumer(e.sys.ConsumerConfig()) // no fast track: the monitor admits
	defer cons.Stop()
	base := time.Now().UnixMilli()
	e.sys.Join(e.ev, user(0), base)
	e.sys.Join(e.ev, user(1), base+1)
	e.waitLine(2)

	// An admitter admits u000; its record waits at the gate.
	g := newGate(e.sys.Pub)
	admitter := e.sys.Recorded(redisstore.Options{}, g)
	ticked := make(chan queue.TickResult, 1)
	go func() {
		res, err := admitter.Tick(e.ctx, queue.TickRequest{EventIDs: []string{e.ev}, NowMs: time.Now().UnixMilli(), AdmitBatch: 10})
		if err != nil {
			t.Error(err)
			res = []queue.TickResult{{}}
		}
		ticked <- res[0]
	}()
	<-g.entered

	// The rebuild begins; once it has read the log to its end, the record
	// is acknowledged and the admitter marks it recorded.
	var during queue.TickResult
	var duringPlace queue.Place
	rb := &rebuild.Rebuilder{Log: afterRead{e.sys.Pub.Admin(), func() {
		close(g.open)
		during = <-ticked
		b, err := e.store.Status(e.ctx, e.ev, []string{user(0)}, time.Now().UnixMilli())
		if err != nil {
			t.Error(err)
			return
		}
		duringPlace = b.Places[0]
	}}, Store: e.store, Logger: testenv.Logger(t)}
	if _, err := rb.Rebuild(e.ctx, e.ev); err != nil {
		t.Fatal(err)
	}
	if len(during.Admitted) != 0 || duringPlace.StayUntil > 0 {
		t.Errorf("during the rebuild u000 was told of an admission the rebuild did not read: tick told %v, status %+v", during.Admitted, duringPlace)
	}
	if got := e.zset(redisstore.HoldersKey(e.ev)); len(got) != 1 || got[user(0)] == 0 {
		t.Fatalf("holders after the rebuild %v, want u000 still holding", got)
	}
	want := []string{user(1)}
	if got := e.line(); len(got) != 1 || got[0].User != user(1) {
		t.Fatalf("line after the rebuild %v, want %v alone (u000 not back in line)", got, want)
	}

	// A monitor tick past the grace records u000 (again: one admission)
	// and tells it; nobody else is admitted, u000 never twice.
	r := e.tick(time.Now().Add(redisstore.RecordGrace+time.Second), 0)
	if r.Recovered != 1 || len(r.Admitted) != 0 || r.Holders != 1 {
		t.Fatalf("tick after the rebuild: recovered %d, admitted %v, %d holders; want 1, none, 1", r.Recovered, r.Admitted, r.Holders)
	}
	b, err := e.store.Status(e.ctx, e.ev, []string{user(0), user(1)}, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if b.Places[0].StayUntil <= 0 || b.Places[1].Rank != 0 {
		t.Fatalf("statuses after the record %+v: want u000 holding, u001 first in line", b.Places)
	}
	if got := e.admittedTotal(); got != "1" {
		t.Fatalf("admittedTotal %s, want 1", got)
	}
	active, served := e.zset(redisstore.HoldersKey(e.ev)), e.zset(redisstore.ServedKey(e.ev))

	// The log now holds u000's admission (twice: read as one).
	if _, err := e.rebuilder().Rebuild(e.ctx, e.ev); err != nil {
		t.Fatal(err)
	}
	if got := e.zset(redisstore.HoldersKey(e.ev)); !equalMaps(got, active) {
		t.Fatalf("holders after a second rebuild %v, want %v", got, active)
	}
	if got := e.zset(redisstore.ServedKey(e.ev)); !equalMaps(got, served) {
		t.Fatalf("served after a second rebuild %v, want %v", got, served)
	}
	if got := e.admittedTotal(); got != "1" {
		t.Fatalf("admittedTotal after a second rebuild %s, want 1", got)
	}
	if r := e.tick(time.Now(), 0); len(r.Admitted) != 0 || r.Holders != 1 {
		t.Fatalf("tick after a second rebuild admitted %v (%d holders), want nobody (1 holder)", r.Admitted, r.Holders)
	}
}

func equalMaps(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

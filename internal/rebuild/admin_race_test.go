package rebuild_test

import (
	"errors"
	"testing"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/rebuild"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestRebuildKeepsAnAdminChange (issue 29, defect 4): an admin change
// stored just before a rebuild began, whose config record lies past the end
// the rebuild read, is kept (not the log's older configuration); a change
// asked while the event is being rebuilt is refused (ErrRebuilding, 503)
// and changes nothing.
func TestRebuildKeepsAnAdminChange(t *testing.T) {
	e := newEnv(t, 5)
	paused := queue.Event{ID: e.ev, Capacity: 2, StaySeconds: 60, State: queue.StatePaused, Partitions: 3}

	t.Run("a change whose record lies past the end read", func(t *testing.T) {
		g := newGate(e.sys.Pub)
		admin := e.sys.Recorded(redisstore.Options{}, g)
		put := make(chan error, 1)
		go func() {
			_, err := admin.PutEvent(e.ctx, paused)
			put <- err
		}()
		<-g.entered
		rb := &rebuild.Rebuilder{Log: afterRead{e.sys.Pub.Admin(), func() {
			close(g.open)
			if err := <-put; err != nil {
				t.Errorf("the PUT answered %v, want it done", err)
			}
		}}, Store: e.store, Logger: testenv.Logger(t)}
		if _, err := rb.Rebuild(e.ctx, e.ev); err != nil {
			t.Fatal(err)
		}
		got, err := e.store.Event(e.ctx, e.ev)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != queue.StatePaused || got.Capacity != 2 {
			t.Fatalf("after the rebuild the event is %s with capacity %d, want the change kept: paused, 2", got.State, got.Capacity)
		}
		// Its record is in the log now: a second rebuild keeps it too.
		if _, err := e.rebuilder().Rebuild(e.ctx, e.ev); err != nil {
			t.Fatal(err)
		}
		if got, err := e.store.Event(e.ctx, e.ev); err != nil || got.State != queue.StatePaused || got.Capacity != 2 {
			t.Fatalf("after a second rebuild: %+v %v, want paused, 2", got, err)
		}
	})

	t.Run("a change while the event is rebuilt", func(t *testing.T) {
		rb := e.rebuilder()
		began, err := rb.Begin(e.ctx, e.ev)
		if err != nil {
			t.Fatal(err)
		}
		open := paused
		open.State, open.Capacity = queue.StateOpen, 7
		if _, err := e.store.PutEvent(e.ctx, open); !errors.Is(err, queue.ErrRebuilding) {
			t.Fatalf("PUT while rebuilding: %v, want ErrRebuilding", err)
		}
		if _, err := rb.Finish(e.ctx, e.ev, began); err != nil {
			t.Fatal(err)
		}
		got, err := e.store.Event(e.ctx, e.ev)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != queue.StatePaused || got.Capacity != 2 {
			t.Fatalf("after the rebuild the event is %s with capacity %d, want paused, 2 (the refused change not applied)", got.State, got.Capacity)
		}
		if _, err := e.store.PutEvent(e.ctx, open); err != nil {
			t.Fatalf("PUT after the rebuild: %v", err)
		}
	})
}

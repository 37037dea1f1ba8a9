package api

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/pkg/queue"
)

// slowStore answers Event after a release signal, counting the asks; the
// rest of queue.EventStore is not used by the cache.
type slowStore struct {
	queue.EventStore
	asks    atomic.Int64
	release chan struct{}
}

func (s *slowStore) Event(ctx context.Context, id string) (queue.Event, error) {
	s.asks.Add(1)
	select {
	case <-s.release:
		return queue.Event{ID: id, Capacity: 2, State: queue.StateOpen}, nil
	case <-ctx.Done():
		return queue.Event{}, ctx.Err()
	}
}

// TestExpiredEntryIsRefreshedOnce: when an entry expires under many joins,
// one of them asks the store while the others go on with the entry.
func TestExpiredEntryIsRefreshedOnce(t *testing.T) {
	var clock atomic.Int64
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	store := &slowStore{release: make(chan struct{})}
	c := newEventCache(store, time.Second, now)
	close(store.release)
	if _, err := c.get(t.Context(), "e1"); err != nil {
		t.Fatal(err)
	}
	store.release = make(chan struct{}) // the next ask hangs until released

	clock.Add(int64(2 * time.Second)) // expired
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			ev, err := c.get(t.Context(), "e1")
			if err == nil && ev.Capacity != 2 {
				t.Errorf("served %+v", ev)
			}
			errs <- err
		})
	}
	// 49 are served from the entry at once; one waits on the store.
	for i := range 49 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			close(store.release)
			t.Fatalf("only %d of 49 joins were served while one refresh hung; the store was asked %d times", i, store.asks.Load())
		}
	}
	if n := store.asks.Load(); n != 2 {
		t.Errorf("the store was asked %d times, want 2 (fill, one refresh)", n)
	}
	close(store.release)
	wg.Wait()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

package queue

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowStore answers Event after a release signal, counting the asks.
type slowStore struct {
	asks    atomic.Int64
	release chan struct{}
}

func (s *slowStore) Event(ctx context.Context, id string) (Event, error) {
	s.asks.Add(1)
	select {
	case <-s.release:
		return Event{ID: id, Capacity: 2, State: StateOpen}, nil
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

// TestExpiredEntryIsRefreshedOnce: when an entry expires under many joins,
// one of them asks the store while the others go on with the entry.
func TestExpiredEntryIsRefreshedOnce(t *testing.T) {
	var clock atomic.Int64
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	store := &slowStore{release: make(chan struct{})}
	c := NewEventCache(store, time.Second, now)
	close(store.release)
	if _, err := c.Event(t.Context(), "e1"); err != nil {
		t.Fatal(err)
	}
	store.release = make(chan struct{}) // the next ask hangs until released

	clock.Add(int64(2 * time.Second)) // expired
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			ev, err := c.Event(t.Context(), "e1")
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
	// The refresh's ask may come after the others were served: wait for it.
	for deadline := time.Now().Add(5 * time.Second); store.asks.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
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

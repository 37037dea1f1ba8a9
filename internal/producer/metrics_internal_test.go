package producer

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/internal/queue"
)

// countingStore holds a list of events and counts its reads (the Redis
// side is TestPublicMetricsAreNoRedisAmplifier's: this package's own tests
// cannot import the test stack).
type countingStore struct {
	queue.EventStore
	ids   atomic.Pointer[[]string]
	lists atomic.Int64
}

func (s *countingStore) EventIDs(context.Context) ([]string, error) {
	s.lists.Add(1)
	return *s.ids.Load(), nil
}

func (s *countingStore) EventStatus(_ context.Context, id string, _ int64) (queue.EventStatus, error) {
	return queue.EventStatus{Event: queue.Event{ID: id}}, nil
}

// TestEventMetricsAreReadAgainAfterTheWindow: within eventMetricsEvery the
// scrapes share one read of the store; the first scrape after it reads
// again and shows what changed.
func TestEventMetricsAreReadAgainAfterTheWindow(t *testing.T) {
	store := &countingStore{}
	c := newEventCollector(store, time.Now, slog.New(slog.DiscardHandler))
	wall := time.Unix(1_700_000_000, 0)
	c.wall = func() time.Time { return wall }
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	events := func() int {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "waitq_event_waiting" {
				return len(mf.GetMetric())
			}
		}
		return 0
	}
	store.ids.Store(&[]string{"a"})
	if n := events(); n != 1 {
		t.Fatalf("first scrape: %d events", n)
	}
	store.ids.Store(&[]string{"a", "b"})
	wall = wall.Add(eventMetricsEvery - time.Millisecond)
	if n := events(); n != 1 || store.lists.Load() != 1 {
		t.Fatalf("within the window: %d events from %d reads, want the first read's 1", n, store.lists.Load())
	}
	wall = wall.Add(time.Millisecond)
	if n := events(); n != 2 || store.lists.Load() != 2 {
		t.Fatalf("after the window: %d events from %d reads, want 2 from a second read", n, store.lists.Load())
	}
}

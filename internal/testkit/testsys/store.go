package testsys

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testredis"
)

// NewStore returns a Store over a redis-server of the test's own, and its
// client.
func NewStore(t *testing.T) (*redisstore.Store, *redis.Client) {
	t.Helper()
	c := testredis.Start(t).Client()
	return MustStore(t, c, redisstore.Options{}), c
}

// MustStore returns a Store over c with o, failing the test on error.
func MustStore(tb testing.TB, c redis.UniversalClient, o redisstore.Options) *redisstore.Store {
	tb.Helper()
	s, err := redisstore.New(c, o)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// lineStore is what PutLine writes through: redisstore's Store, or
// recording's over it.
type lineStore interface {
	PutEvent(ctx context.Context, e queue.Event) (bool, error)
	Ingest(ctx context.Context, msgs []queue.Message, nowMs int64) (queue.IngestResult, error)
}

// PutLine registers ev with capacity and hold, open, and queues users u0,
// u1, … with stamps 1, 2, ….
func PutLine(t *testing.T, s lineStore, ev string, capacity, staySeconds, users int) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.PutEvent(ctx, queue.Event{ID: ev, Capacity: capacity, StaySeconds: staySeconds, State: queue.StateOpen, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	msgs := make([]queue.Message, users)
	for i := range msgs {
		msgs[i] = queue.Message{V: 1, Op: queue.OpJoin, EventID: ev, UserID: fmt.Sprintf("u%d", i), TS: int64(i + 1), ID: "x"}
	}
	if _, err := s.Ingest(ctx, msgs, 0); err != nil {
		t.Fatal(err)
	}
}

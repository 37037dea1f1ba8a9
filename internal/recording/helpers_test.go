package recording_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testredis"
)

// The scenes of redisstore's tests, over a store whose changes are
// recorded.

func newStore(t *testing.T) (*redisstore.Store, *redis.Client) {
	t.Helper()
	srv := testredis.Start(t)
	c := srv.Client()
	return mustNew(t, c, redisstore.Options{}), c
}

// mustNew returns a Store over c with o.
func mustNew(tb testing.TB, c redis.UniversalClient, o redisstore.Options) *redisstore.Store {
	tb.Helper()
	s, err := redisstore.New(c, o)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func msg(op queue.Op, ev, user string, ts int64) queue.Message {
	return queue.Message{V: 1, Op: op, EventID: ev, UserID: user, TS: ts, ID: "x"}
}

// putLine registers ev with capacity and hold and queues users u0, u1, … with
// stamps 1, 2, ….
func putLine(t *testing.T, s *redisstore.Store, ev string, capacity, holdSeconds, users int) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.PutEvent(ctx, queue.Event{ID: ev, Capacity: capacity, HoldSeconds: holdSeconds, State: queue.StateOpen, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	msgs := make([]queue.Message, users)
	for i := range msgs {
		msgs[i] = msg(queue.OpJoin, ev, fmt.Sprintf("u%d", i), int64(i+1))
	}
	if _, err := s.Ingest(ctx, msgs, 0); err != nil {
		t.Fatal(err)
	}
}

func tick(t *testing.T, s queue.GatewayStore, ev string, now int64, batch int) queue.TickResult {
	t.Helper()
	res, err := s.Tick(context.Background(), queue.TickRequest{EventIDs: []string{ev}, NowMs: now, AdmitBatch: batch, PresenceCutoffMs: 0, SweepLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

func line(t *testing.T, c *redis.Client, ev string) []redis.Z {
	t.Helper()
	z, err := c.ZRangeWithScores(context.Background(), redisstore.WaitingKey(ev), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return z
}

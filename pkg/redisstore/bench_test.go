package redisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/testredis"
	"github.com/waitq/waitq/pkg/queue"
	"github.com/waitq/waitq/pkg/redisstore"
)

// benchStore is a real redis-server with one event of n waiting users.
func benchStore(b *testing.B, n int) (*redisstore.Store, []string) {
	b.Helper()
	srv := testredis.Start(b)
	c := srv.Client()
	s := redisstore.New(c)
	ctx := context.Background()
	if _, err := s.PutEvent(ctx, queue.Event{ID: "sale1", Capacity: 100, HoldSeconds: 60, State: queue.StateOpen, Partitions: 1}); err != nil {
		b.Fatal(err)
	}
	users := make([]string, n)
	zs := make([]redis.Z, n)
	for i := range users {
		users[i] = fmt.Sprintf("user%06d", i)
		zs[i] = redis.Z{Member: users[i], Score: float64(i + 1)}
	}
	if err := c.ZAdd(ctx, redisstore.WaitingKey("sale1"), zs...).Err(); err != nil {
		b.Fatal(err)
	}
	return s, users
}

// BenchmarkStatus10k is one status tick's Redis work for 10,000 sockets of
// one event: one pipelined round trip of ten status.lua calls.
func BenchmarkStatus10k(b *testing.B) {
	s, users := benchStore(b, 100_000)
	watched := users[:10_000]
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Status(ctx, "sale1", watched, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(watched)), "ns/user")
}

// BenchmarkAdmitTick is one slot-monitor tick over an event with a long line
// and free slots: sweep, drop ended holds, admit 100.
func BenchmarkAdmitTick(b *testing.B) {
	s, _ := benchStore(b, 1_000_000)
	ctx := context.Background()
	now := int64(1)
	b.ReportAllocs()
	for b.Loop() {
		now += 61_000 // every hold of the previous tick has ended
		if _, err := s.Tick(ctx, queue.TickRequest{EventIDs: []string{"sale1"}, NowMs: now, AdmitBatch: 100, PresenceCutoffMs: 0, SweepLimit: 1000}); err != nil {
			b.Fatal(err)
		}
	}
}

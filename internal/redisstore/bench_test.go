package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testredis"
	"github.com/waitq/waitq/pkg/draw"
)

// benchStore is a real redis-server with one event of n waiting users.
func benchStore(b *testing.B, n int) (*redisstore.Store, []string) {
	b.Helper()
	srv := testredis.Start(b)
	c := srv.Client()
	s := mustNew(b, c, redisstore.Options{})
	ctx := context.Background()
	if _, err := s.PutEvent(ctx, queue.Event{ID: "sale1", Capacity: 100, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}); err != nil {
		b.Fatal(err)
	}
	users := make([]string, n)
	zs := make([]redis.Z, n)
	for i := range users {
		users[i] = fmt.Sprintf("user%06d", i)
		zs[i] = redis.Z{Member: users[i], Score: float64(i + 1)}
	}
	if n > 0 {
		if err := c.ZAdd(ctx, redisstore.WaitingKey("sale1"), zs...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	return s, users
}

// BenchmarkStatus10k is one status round's Redis work for 10,000 sockets of
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

// BenchmarkIngest500 writes batches of 500 new joins into one event's line,
// as the consumer does: one ingest.lua call. "plain" is an event without a
// schedule; "drop-prequeue" a drop whose joins are all drawn (an HMAC each
// in Go, the drawn score in Lua).
func BenchmarkIngest500(b *testing.B) {
	for _, drop := range []bool{false, true} {
		name := "plain"
		if drop {
			name = "drop-prequeue"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := benchStore(b, 0)
			ctx := context.Background()
			opens := int64(0)
			if drop {
				seed, _ := draw.NewSeed()
				opens = int64(1) << 50
				e := queue.Event{ID: "sale1", Capacity: 100, StaySeconds: 60, State: queue.StateOpen, Partitions: 1,
					Schedule: queue.Schedule{OpensAt: opens}, Seed: &seed}
				if _, err := s.PutEvent(ctx, e); err != nil {
					b.Fatal(err)
				}
			}
			msgs := make([]queue.Message, 500)
			batch := 0
			b.ReportAllocs()
			for b.Loop() {
				for i := range msgs {
					msgs[i] = queue.Message{V: 1, Op: queue.OpJoin, EventID: "sale1", UserID: fmt.Sprintf("u%d-%d", batch, i), TS: int64(batch*500 + i + 1)}
				}
				batch++
				if r, err := s.Ingest(ctx, msgs, 1); err != nil || r.Joined != len(msgs) {
					b.Fatalf("%+v %v", r, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(msgs)), "ns/join")
		})
	}
}

// BenchmarkIngestLog500 is the consumer's common case: batches of 500 new
// joins read from six partitions, each with its offset and its visit (an
// Idempotency-Key), into one event without a schedule. It reports the Redis
// server's CPU per join (redisstore.ServerCPU), the figure docs/performance.md
// plans with.
func BenchmarkIngestLog500(b *testing.B) {
	s, _ := benchStore(b, 0)
	c := s.Client().(*redis.Client)
	ctx := context.Background()
	msgs := make([]queue.LogMessage, 500)
	var offsets [6]int64
	batch := 0
	cpu0 := mustServerCPU(b, c)
	b.ReportAllocs()
	for b.Loop() {
		fillJoins(msgs, &offsets, batch, true)
		batch++
		if r, err := s.IngestLog(ctx, msgs, int64(batch*500)); err != nil || r.Joined != len(msgs) {
			b.Fatalf("%+v %v", r, err)
		}
	}
	b.ReportMetric(float64((mustServerCPU(b, c)-cpu0).Nanoseconds())/float64(b.N)/float64(len(msgs))/1000, "redis-µs/join")
}

// fillJoins fills msgs with the round-th batch of new joins of "sale1",
// stamped after every earlier round's, dealt over the partitions of offsets
// in turn (their offsets rising), each with a visit (an Idempotency-Key)
// when visits.
func fillJoins(msgs []queue.LogMessage, offsets *[6]int64, round int, visits bool) {
	for i := range msgs {
		p := i % len(offsets)
		offsets[p]++
		seq := round*len(msgs) + i
		m := queue.Message{V: 1, Op: queue.OpJoin, EventID: "sale1", UserID: fmt.Sprintf("u%d-%d", round, i), TS: int64(seq + 1)}
		if visits {
			m.JoinKey = fmt.Sprintf("8f14e45f-ceea-467f-a8f0-%012d", seq)
		}
		msgs[i] = queue.LogMessage{Message: m, Partition: p, Offset: offsets[p]}
	}
}

func mustServerCPU(b *testing.B, c *redis.Client) time.Duration {
	d, err := redisstore.ServerCPU(context.Background(), c)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkPlainJoinFloors puts ingest.lua's plain batch (500 new joins from
// six partitions, behind everyone) next to the least any write of the same
// joins costs Redis, each on a server of its own, in redis-µs/join (the
// server's INFO cpu): the go-redis pipeline of one ZADD a join that
// "loadgen ingest" compares with, one variadic ZADD, a script that only
// ZADDs its arguments, and one that first reads them (ZMSCORE) as ingest.lua
// does. docs/performance.md, "The ingest step's Redis CPU".
func BenchmarkPlainJoinFloors(b *testing.B) {
	const n = 500
	lookupAndAdd := redis.NewScript(`
local n = #ARGV / 2
local at = redis.call('ZMSCORE', KEYS[1], unpack(ARGV, 1, n))
local adds = {}
for i = 1, n do
  adds[2 * i - 1], adds[2 * i] = ARGV[n + i], ARGV[i]
end
return redis.call('ZADD', KEYS[1], unpack(adds))`)
	addOnly := redis.NewScript(`return redis.call('ZADD', KEYS[1], unpack(ARGV))`)
	// write writes batch's joins (user i-th, stamp) one way.
	ways := []struct {
		name  string
		write func(ctx context.Context, s *redisstore.Store, c *redis.Client, batch []queue.LogMessage) error
	}{
		{"zadd-pipeline", func(ctx context.Context, _ *redisstore.Store, c *redis.Client, batch []queue.LogMessage) error {
			_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, m := range batch {
					p.ZAdd(ctx, redisstore.WaitingKey("sale1"), redis.Z{Score: float64(m.TS), Member: m.UserID})
				}
				return nil
			})
			return err
		}},
		{"zadd-variadic", func(ctx context.Context, _ *redisstore.Store, c *redis.Client, batch []queue.LogMessage) error {
			zs := make([]redis.Z, len(batch))
			for i, m := range batch {
				zs[i] = redis.Z{Score: float64(m.TS), Member: m.UserID}
			}
			return c.ZAdd(ctx, redisstore.WaitingKey("sale1"), zs...).Err()
		}},
		{"script-zadd", func(ctx context.Context, _ *redisstore.Store, c *redis.Client, batch []queue.LogMessage) error {
			args := make([]any, 0, 2*len(batch))
			for _, m := range batch {
				args = append(args, m.TS, m.UserID)
			}
			return addOnly.Run(ctx, c, []string{redisstore.WaitingKey("sale1")}, args...).Err()
		}},
		{"script-zmscore-zadd", func(ctx context.Context, _ *redisstore.Store, c *redis.Client, batch []queue.LogMessage) error {
			args := make([]any, 2*len(batch))
			for i, m := range batch {
				args[i], args[len(batch)+i] = m.UserID, m.TS
			}
			return lookupAndAdd.Run(ctx, c, []string{redisstore.WaitingKey("sale1")}, args...).Err()
		}},
		{"ingest", func(ctx context.Context, s *redisstore.Store, _ *redis.Client, batch []queue.LogMessage) error {
			r, err := s.IngestLog(ctx, batch, batch[len(batch)-1].TS)
			if err == nil && r.Joined != len(batch) {
				err = fmt.Errorf("ingest %+v, want %d joined", r, len(batch))
			}
			return err
		}},
	}
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			s, _ := benchStore(b, 0)
			c := s.Client().(*redis.Client)
			ctx := context.Background()
			batch := make([]queue.LogMessage, n)
			var offsets [6]int64
			round := 0
			cpu0 := mustServerCPU(b, c)
			for b.Loop() {
				fillJoins(batch, &offsets, round, false)
				round++
				if err := w.write(ctx, s, c, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((mustServerCPU(b, c)-cpu0).Nanoseconds())/float64(b.N)/n/1000, "redis-µs/join")
		})
	}
}

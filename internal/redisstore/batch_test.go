package redisstore_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testredis"
	"github.com/waitq/waitq/pkg/draw"
)

// A batch of joins and leaves leaves Redis as its messages applied one by
// one do, whatever the mix: a user joining, leaving and joining again in
// one batch, late joins stamped before others, retries of an admitted
// visit, holders and served users, pre-queue joins of a drop. ingest.lua
// reads the batch's users in bulk and writes the changes in bulk; this
// holds it to the one-at-a-time meaning.
func TestBatchAppliesAsItsMessagesOneByOne(t *testing.T) {
	for name, open := range testredis.Backends() {
		t.Run(name, func(t *testing.T) {
			batched, single := open(t), open(t)
			seed, err := draw.NewSeed()
			if err != nil {
				t.Fatal(err)
			}
			for round := range 24 {
				ev := fmt.Sprintf("batch-%d", round)
				drop := round%2 == 1
				rng := rand.New(rand.NewPCG(uint64(round), 7))
				msgs := randomBatch(rng, ev, drop)
				var got [2]state
				for i, c := range []redis.UniversalClient{batched, single} {
					s := mustNew(t, c, redisstore.Options{})
					putBatchEvent(t, s, c, ev, drop, seed)
					var res queue.IngestResult
					if i == 0 {
						res = mustIngest(t, s, msgs)
					} else {
						for _, m := range msgs {
							r := mustIngest(t, s, []queue.Message{m})
							res.Joined, res.Left, res.Ignored = res.Joined+r.Joined, res.Left+r.Left, res.Ignored+r.Ignored
						}
					}
					got[i] = readState(t, c, ev)
					got[i].counts = [3]int{res.Joined, res.Left, res.Ignored}
				}
				if !got[0].equal(got[1]) {
					t.Fatalf("round %d (drop %v): batched %+v\none by one %+v\nmessages %+v", round, drop, got[0], got[1], msgs)
				}
			}
		})
	}
}

// batchNow is the test's clock: a drop opens at opens, so joins stamped
// before take drawn places.
const batchNow = opens + 10_000

// putBatchEvent makes ev (a drop opening at opens when drop) and puts some
// users ahead of the batch: u0 holds a slot, u1's hold ended (served, its
// visit v1 remembered), u2 was served long ago, u3 and u4 wait.
func putBatchEvent(t *testing.T, s *redisstore.Store, c redis.UniversalClient, ev string, drop bool, seed draw.Seed) {
	t.Helper()
	ctx := context.Background()
	e := queue.Event{ID: ev, Capacity: 100, HoldSeconds: 60, State: queue.StatePaused, Partitions: 1}
	if drop {
		e.Schedule = queue.Schedule{OpensAt: opens, PrequeueSeconds: 60}
		e.Seed = &seed
	}
	if _, err := s.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	p := c.TxPipeline()
	p.ZAdd(ctx, redisstore.ServedKey(ev), redis.Z{Score: float64(batchNow - 2_000), Member: "u0"}, redis.Z{Score: float64(batchNow - 90_000), Member: "u1"},
		redis.Z{Score: float64(batchNow - 500_000), Member: "u2"})
	p.ZAdd(ctx, redisstore.ActiveKey(ev), redis.Z{Score: float64(batchNow + 58_000), Member: "u0"}, redis.Z{Score: float64(batchNow - 30_000), Member: "u1"})
	p.HSet(ctx, redisstore.VisitsKey(ev), "u1", "v1")
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	mustIngest(t, s, []queue.Message{msg(queue.OpJoin, ev, "u3", batchNow-5_000), msg(queue.OpJoin, ev, "u4", batchNow-4_000)})
}

// randomBatch is 40 joins and leaves of 8 users: stamps around the
// batch's clock (some before the drop's opening), visits from a few.
func randomBatch(rng *rand.Rand, ev string, drop bool) []queue.Message {
	msgs := make([]queue.Message, 40)
	for i := range msgs {
		user := fmt.Sprintf("u%d", rng.IntN(8))
		ts := batchNow - 6_000 + rng.Int64N(6_000)
		if drop && rng.IntN(2) == 0 {
			ts = opens - 1 - rng.Int64N(50_000)
		}
		if rng.IntN(4) == 0 {
			msgs[i] = msg(queue.OpLeave, ev, user, ts)
			continue
		}
		m := msg(queue.OpJoin, ev, user, ts)
		m.Visit = []string{"", "v1", "v2"}[rng.IntN(3)]
		msgs[i] = m
	}
	return msgs
}

func mustIngest(t *testing.T, s *redisstore.Store, msgs []queue.Message) queue.IngestResult {
	t.Helper()
	res, err := s.Ingest(context.Background(), msgs, batchNow)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// state is what an ingest writes: the line, the pre-queue, the visits,
// the stats (delays, inversions) and the counts it answered.
type state struct {
	waiting, prequeue map[string]float64
	visits, stats     map[string]string
	counts            [3]int
}

func readState(t *testing.T, c redis.UniversalClient, ev string) state {
	t.Helper()
	ctx := context.Background()
	zmap := func(key string) map[string]float64 {
		zs, err := c.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]float64{}
		for _, z := range zs {
			m[z.Member.(string)] = z.Score
		}
		return m
	}
	st := state{waiting: zmap(redisstore.WaitingKey(ev)), prequeue: zmap(redisstore.PrequeueKey(ev))}
	var err error
	if st.visits, err = c.HGetAll(ctx, redisstore.VisitsKey(ev)).Result(); err != nil {
		t.Fatal(err)
	}
	if st.stats, err = c.HGetAll(ctx, redisstore.StatsKey(ev)).Result(); err != nil {
		t.Fatal(err)
	}
	return st
}

func (a state) equal(b state) bool {
	return maps.Equal(a.waiting, b.waiting) && maps.Equal(a.prequeue, b.prequeue) &&
		maps.Equal(a.visits, b.visits) && maps.Equal(a.stats, b.stats) && a.counts == b.counts
}

package redisstore_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
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
// visit, holders and served users, pre-queue joins of a drop, messages
// redelivered (in the batch, or at or below their partition's mark) and
// records among them. Every third round is a plain batch of new users in
// stamp order (ingest.lua's step that adds everyone at once), fed to the
// batch partition by partition, with one of the things that rule it out
// now and then, and every fourth round has a served set too big to read
// whole. ingest.lua reads the batch's
// users in bulk and writes the changes in bulk; this holds it to the
// one-at-a-time meaning.
func TestBatchAppliesAsItsMessagesOneByOne(t *testing.T) {
	for name, open := range testredis.Backends() {
		t.Run(name, func(t *testing.T) {
			batched, single := open(t), open(t)
			seed, err := draw.NewSeed()
			if err != nil {
				t.Fatal(err)
			}
			for round := range 36 {
				ev := fmt.Sprintf("batch-%d", round)
				drop := round%2 == 1
				rng := rand.New(rand.NewPCG(uint64(round), 7))
				plain, kind := round%3 == 2, round/3%6
				var msgs []queue.Message
				if plain {
					drop = kind >= 4
					msgs = plainBatch(rng, ev, kind)
				} else {
					msgs = randomBatch(rng, ev, drop)
				}
				inLog := inTheLog(rng, msgs, !plain)
				var got [2]state
				for i, c := range []redis.UniversalClient{batched, single} {
					s := mustNew(t, c, redisstore.Options{})
					putBatchEvent(t, s, c, ev, drop, seed)
					if round%4 == 1 {
						// a served set too big to read whole (ingest.lua looks
						// its users up one by one then)
						servedLongAgo(t, c, ev, 130)
					}
					if err := c.HSet(context.Background(), redisstore.OffsetsKey(ev), "1", 3).Err(); err != nil {
						t.Fatal(err) // partition 1's first messages were applied before
					}
					if plain && kind == 4 {
						// an empty line: the pre-queue join is after its last
						if err := c.Del(context.Background(), redisstore.WaitingKey(ev)).Err(); err != nil {
							t.Fatal(err)
						}
					}
					if plain && kind == 5 {
						// someone placed after the batch's first was admitted
						if err := c.HSet(context.Background(), redisstore.StatsKey(ev), "admittedMaxScore", batchNow-2_000).Err(); err != nil {
							t.Fatal(err)
						}
					}
					var res queue.IngestResult
					if i == 0 {
						res = mustIngestLog(t, s, byPartition(inLog, plain))
					} else {
						// Each message with a leave of nobody, which only
						// rules out the plain step: the reference is the
						// message-by-message one.
						nobody := queue.LogMessage{Message: msg(queue.OpLeave, ev, "nobody", batchNow), Offset: queue.NoOffset}
						for _, m := range inLog {
							r := mustIngestLog(t, s, []queue.LogMessage{m, nobody})
							res.Joined, res.Left, res.Ignored = res.Joined+r.Joined, res.Left+r.Left, res.Ignored+r.Ignored-1
						}
					}
					got[i] = readState(t, c, ev)
					got[i].counts = [3]int{res.Joined, res.Left, res.Ignored}
				}
				if !got[0].equal(got[1]) || !journalCovers(got[0].journal, got[1].journal) {
					t.Fatalf("round %d (drop %v): batched %+v\none by one %+v\nmessages %+v", round, drop, got[0], got[1], msgs)
				}
			}
		})
	}
}

// servedLongAgo marks n users who are not in any batch as served long ago.
func servedLongAgo(t *testing.T, c redis.UniversalClient, ev string, n int) {
	t.Helper()
	zs := make([]redis.Z, n)
	for i := range zs {
		zs[i] = redis.Z{Score: float64(batchNow - 800_000), Member: fmt.Sprintf("gone%d", i)}
	}
	if err := c.ZAdd(context.Background(), redisstore.ServedKey(ev), zs...).Err(); err != nil {
		t.Fatal(err)
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
	e := queue.Event{ID: ev, Capacity: 100, StaySeconds: 60, State: queue.StatePaused, Partitions: 1}
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
	p.ZAdd(ctx, redisstore.HoldersKey(ev), redis.Z{Score: float64(batchNow + 58_000), Member: "u0"}, redis.Z{Score: float64(batchNow - 30_000), Member: "u1"})
	p.HSet(ctx, redisstore.JoinKeysKey(ev), "u1", redisstore.JoinKeyDigest("v1"))
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
		m.JoinKey = []string{"", "v1", "v2"}[rng.IntN(3)]
		msgs[i] = m
	}
	return msgs
}

// plainBatch is 40 joins of new users in stamp order, some with visits;
// by kind, one of them is a user already waiting (u3), served (u1), or the
// first is stamped before the line's last, or before the drop's opening
// (kind 4, a drop whose line the test empties), or none is (kind 3, and kind 5: a drop whose
// admittedMaxScore the test puts after the first stamp).
func plainBatch(rng *rand.Rand, ev string, kind int) []queue.Message {
	msgs := make([]queue.Message, 40)
	for i := range msgs {
		m := msg(queue.OpJoin, ev, fmt.Sprintf("p%02d", i), batchNow-3_000+int64(i)*50)
		if rng.IntN(2) == 0 {
			m.JoinKey = fmt.Sprintf("pv%d", i)
		}
		msgs[i] = m
	}
	switch i := rng.IntN(len(msgs)); kind {
	case 0:
		msgs[i].UserID = "u3"
	case 1:
		msgs[i].UserID = "u1"
	case 2:
		msgs[0].TS = batchNow - 4_500 // between u3 and u4
	case 4:
		msgs[0].TS = opens - 1
	}
	return msgs
}

// inTheLog places msgs in a log of three partitions, as a consumer reads
// them: offsets rising in each, with records between. With again,
// partition 1 starts at its mark (3, set by the test) so that its first
// messages were applied already, and a message now and then is delivered
// again later in the batch; without, partition 1 starts after its mark.
func inTheLog(rng *rand.Rand, msgs []queue.Message, again bool) []queue.LogMessage {
	var next [3]int64
	next[1] = 4
	if again {
		next[1] = 2
	}
	var out []queue.LogMessage
	for _, m := range msgs {
		p := rng.IntN(3)
		if rng.IntN(6) == 0 {
			out = append(out, queue.LogMessage{Message: msg(queue.OpAdmit, m.EventID, "r", m.TS), Partition: p, Offset: next[p]})
			next[p]++
		}
		out = append(out, queue.LogMessage{Message: m, Partition: p, Offset: next[p]})
		next[p]++
		if again && rng.IntN(8) == 0 {
			out = append(out, out[rng.IntN(len(out))])
		}
	}
	return out
}

// byPartition is inLog as a consumer's batch holds a plain batch: each
// partition's run after the other's (offsets rising in each, stamps not
// in order); other batches as they are.
func byPartition(inLog []queue.LogMessage, plain bool) []queue.LogMessage {
	if !plain {
		return inLog
	}
	out := slices.Clone(inLog)
	slices.SortStableFunc(out, func(a, b queue.LogMessage) int { return b.Partition - a.Partition })
	return out
}

func mustIngestLog(t *testing.T, s *redisstore.Store, msgs []queue.LogMessage) queue.IngestResult {
	t.Helper()
	res, err := s.IngestLog(context.Background(), msgs, batchNow)
	if err != nil {
		t.Fatal(err)
	}
	return res
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
// the stats (delays, inversions), the offsets applied and the counts it
// answered.
type state struct {
	waiting, prequeue map[string]float64
	visits, stats     map[string]string
	offsets           map[string]string
	counts            [3]int
	journal           []string // the changes noted, in order
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
	if st.visits, err = c.HGetAll(ctx, redisstore.JoinKeysKey(ev)).Result(); err != nil {
		t.Fatal(err)
	}
	if st.stats, err = c.HGetAll(ctx, redisstore.StatsKey(ev)).Result(); err != nil {
		t.Fatal(err)
	}
	if st.offsets, err = c.HGetAll(ctx, redisstore.OffsetsKey(ev)).Result(); err != nil {
		t.Fatal(err)
	}
	elems, err := c.LRange(ctx, redisstore.JournalKey(ev), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range elems {
		lines := strings.Split(e, "\n")
		st.journal = append(st.journal, lines[1:]...) // after "<epoch> <seq>"
	}
	return st
}

// journalCovers reports whether the batch's journal notes what the messages
// one by one noted: the same leaves and pre-queue joins, and every join one
// by one noted as ahead of the line's last (the batch may note more: it
// keeps the last it knew after a leave of the last, which is harmless).
func journalCovers(batched, single []string) bool {
	others := func(j []string) (out []string, ahead map[string]bool) {
		ahead = map[string]bool{}
		for _, l := range j {
			if strings.HasPrefix(l, "+") {
				ahead[l] = true
			} else {
				out = append(out, l)
			}
		}
		return out, ahead
	}
	bo, ba := others(batched)
	so, sa := others(single)
	for l := range sa {
		if !ba[l] {
			return false
		}
	}
	return slices.Equal(bo, so)
}

func (a state) equal(b state) bool {
	return maps.Equal(a.waiting, b.waiting) && maps.Equal(a.prequeue, b.prequeue) &&
		maps.Equal(a.visits, b.visits) && maps.Equal(a.stats, b.stats) && maps.Equal(a.offsets, b.offsets) && a.counts == b.counts
}

package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// graceMs is the disconnect grace these tests tick with: a presence older
// than it is away.
const graceMs = 30_000

// awayTick is a monitor tick of ev at now with the grace.
func awayTick(t *testing.T, s *redisstore.Store, ev string, now int64, batch int) queue.TickResult {
	t.Helper()
	res, err := s.Tick(context.Background(), queue.TickRequest{EventIDs: []string{ev}, NowMs: now, AdmitBatch: batch,
		PresenceCutoffMs: now - graceMs, SweepLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// putAwayLine registers ev keeping places while away (keep 30 min, claim
// 10 min), with capacity and a 10 s hold, and queues u0…u(n-1) stamped
// 1…n.
func putAwayLine(t *testing.T, s *redisstore.Store, ev string, capacity, n int) {
	t.Helper()
	ctx := context.Background()
	e := queue.Event{ID: ev, Capacity: capacity, StaySeconds: 10, State: queue.StateOpen, Partitions: 1, Away: queue.DefaultAway()}
	if _, err := s.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	join(t, s, ev, 0, n, 1)
}

// join queues users u<from>…u<to-1>, stamped from ts on.
func join(t *testing.T, s *redisstore.Store, ev string, from, to int, ts int64) queue.IngestResult {
	t.Helper()
	var msgs []queue.Message
	for i := from; i < to; i++ {
		msgs = append(msgs, queue.Message{V: 1, Op: queue.OpJoin, EventID: ev, UserID: fmt.Sprintf("u%d", i), TS: ts + int64(i-from), ID: "x"})
	}
	r, err := s.Ingest(context.Background(), msgs, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// placeOf reads user's place at now as a poll does (which marks a called
// user back).
func placeOf(t *testing.T, s *redisstore.Store, ev, user string, now int64) queue.Place {
	t.Helper()
	b, err := s.Status(context.Background(), ev, []string{user}, now)
	if err != nil {
		t.Fatal(err)
	}
	return b.Places[0]
}

func TestAwayAtTheTurnIsCalledAndAdmittedAheadWhenBack(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putAwayLine(t, s, ev, 1, 4)
	const now = 1_000_000
	c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u0", Score: now - graceMs - 1}, redis.Z{Member: "u1", Score: now - 5})

	r := awayTick(t, s, ev, now, 10)
	if !slices.Equal(r.Called, []string{"u0"}) || !slices.Equal(r.Admitted, []string{"u1"}) || r.Waiting != 2 {
		t.Fatalf("tick: %+v; want u0 called, u1 admitted, two waiting", r)
	}
	p := placeOf(t, s, ev, "u0", now+1000)
	if p.Turn != now+600_000 || p.Rank != -1 {
		t.Fatalf("u0 after the call: %+v; want their turn waiting until %d", p, now+600_000)
	}
	// u1's hold ends at now + 10 s: u0, back, goes before u2.
	r = awayTick(t, s, ev, now+10_000, 10)
	if !slices.Equal(r.Admitted, []string{"u0"}) || len(r.Called) != 0 {
		t.Fatalf("tick after u0 came back: %+v; want u0 admitted", r)
	}
	if p := placeOf(t, s, ev, "u0", now+10_001); p.StayUntil != now+20_000 || p.Turn != queue.TurnNone {
		t.Fatalf("u0 after the claim: %+v", p)
	}
	if p := placeOf(t, s, ev, "u2", now+10_001); p.Rank != 0 {
		t.Fatalf("u2 after the claim: %+v; want first in line", p)
	}
	st, _ := s.EventStatus(ctx, ev, now+10_001)
	if st.AdmittedTotal != 2 || st.Holders != 1 {
		t.Fatalf("status %+v; want 2 admitted, one holder", st)
	}
}

func TestATurnNotClaimedLapsesAndTheUserMayJoinAgain(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putAwayLine(t, s, ev, 1, 3)
	const now = 1_000_000
	c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u0", Score: now - graceMs - 1})
	if r := awayTick(t, s, ev, now, 10); !slices.Equal(r.Called, []string{"u0"}) {
		t.Fatalf("tick: %+v; want u0 called", r)
	}
	// A retry of u0's old join, and a new join while called: no place.
	if r := join(t, s, ev, 0, 1, 1); r.Joined != 0 {
		t.Fatalf("the old join queued a called user again: %+v", r)
	}
	if r := join(t, s, ev, 0, 1, now+5); r.Joined != 0 {
		t.Fatalf("a join while called took a place: %+v", r)
	}
	r := awayTick(t, s, ev, now+600_001, 10)
	if !slices.Equal(r.Lapsed, []string{"u0"}) {
		t.Fatalf("tick after the window: %+v; want u0 lapsed", r)
	}
	if p := placeOf(t, s, ev, "u0", now+600_002); p.Turn != queue.TurnLapsed || p.Rank != -1 {
		t.Fatalf("u0 after the lapse: %+v; want lapsed", p)
	}
	if r := awayTick(t, s, ev, now+600_003, 10); len(r.Admitted) != 0 {
		t.Fatalf("a lapsed turn was admitted: %+v", r)
	}
	if r := join(t, s, ev, 0, 1, now+600_010); r.Joined != 1 {
		t.Fatalf("u0's new join after the lapse: %+v; want a place", r)
	}
	join(t, s, ev, 3, 4, now+600_020) // u3 behind them
	if p := placeOf(t, s, ev, "u0", now+600_021); p.Rank != 0 || p.Turn != queue.TurnNone {
		t.Fatalf("u0 joined again: %+v; want in line (u1 and u2 were admitted meanwhile)", p)
	}
	if p := placeOf(t, s, ev, "u3", now+600_021); p.Rank != 1 {
		t.Fatalf("u3: %+v; want behind u0", p)
	}
}

func TestAClaimMadeInTimeWaitsForASlotPastItsWindow(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putAwayLine(t, s, ev, 1, 2)
	const now = 1_000_000
	c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u0", Score: 1})
	if r := awayTick(t, s, ev, now, 10); !slices.Equal(r.Admitted, []string{"u1"}) || !slices.Equal(r.Called, []string{"u0"}) {
		t.Fatalf("tick: %+v", r)
	}
	placeOf(t, s, ev, "u0", now+1) // back at once; the slot is u1's
	e, _ := s.Event(ctx, ev)
	e.State = queue.StatePaused // and the event pauses past the window
	if _, err := s.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	if r := awayTick(t, s, ev, now+700_000, 10); len(r.Lapsed) != 0 || len(r.Admitted) != 0 {
		t.Fatalf("paused past the window: %+v; want u0's claim kept, nobody admitted", r)
	}
	e.State = queue.StateOpen
	if _, err := s.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	if r := awayTick(t, s, ev, now+700_001, 10); !slices.Equal(r.Admitted, []string{"u0"}) {
		t.Fatalf("open again: %+v; want u0 admitted", r)
	}
}

func TestAwayPlacesAreKeptForTheKeepTimeNotTheGrace(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putAwayLine(t, s, ev, 1, 3)
	const now = 10_000_000
	// u1 away for 5 minutes, u2 for 31: only u2 is past the keep time.
	c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u1", Score: now - 300_000}, redis.Z{Member: "u2", Score: now - 31*60_000})
	if _, err := s.Tick(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: now, AdmitBatch: 0, PresenceCutoffMs: now - graceMs, SweepLimit: 100}); err != nil {
		t.Fatal(err)
	}
	r := awayTick(t, s, ev, now, 0)
	if p := placeOf(t, s, ev, "u1", now); p.Rank != 1 {
		t.Fatalf("u1, away 5 minutes: %+v; want the place kept", p)
	}
	if p := placeOf(t, s, ev, "u2", now); p.Rank != -1 {
		t.Fatalf("u2, away 31 minutes: %+v (tick %+v); want swept", p, r)
	}
}

// TestAwayInterleavingsKeepEveryLimit runs random steps (people away and
// back, joins, releases, pauses and ticks at random times) against a real
// Redis, checking after each: holders never above the capacity, nobody
// admitted faster than the rate allows, nobody admitted while paused, and
// nobody who came back within their claim window lost the turn.
func TestAwayInterleavingsKeepEveryLimit(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	for seed := range uint64(4) {
		ev := fmt.Sprintf("%s-%d", testenv.EventID(t), seed)
		rng := rand.New(rand.NewPCG(seed, 7))
		const users, capacity, perMinute = 40, 3, 30
		e := queue.Event{ID: ev, Capacity: capacity, StaySeconds: 20, AdmitPerMinute: perMinute, State: queue.StateOpen, Partitions: 1,
			Away: queue.Away{KeepSeconds: 3600, ClaimSeconds: 60}}
		if _, err := s.PutEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
		join(t, s, ev, 0, users, 1)
		now := int64(1_000_000)
		backInTime := map[string]bool{} // called users who read their place within the window
		var admissions []int64
		called, claimed := 0, 0
		for step := range 400 {
			now += rng.Int64N(4000)
			u := fmt.Sprintf("u%d", rng.IntN(users))
			switch k := rng.IntN(10); {
			case k < 3: // the page closes: away from now on
				c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: u, Score: float64(now - graceMs - 1)})
			case k < 6: // a page reads the place
				p := placeOf(t, s, ev, u, now)
				if p.Turn > 0 && now < p.Turn {
					backInTime[u] = true
				}
			case k < 7:
				if _, _, err := s.Release(ctx, ev, u, now); err != nil {
					t.Fatal(err)
				}
			case k < 8:
				e.State = []queue.EventState{queue.StateOpen, queue.StatePaused}[rng.IntN(2)]
				if _, err := s.PutEvent(ctx, e); err != nil {
					t.Fatal(err)
				}
			default:
				r := awayTick(t, s, ev, now, 5)
				if e.State == queue.StatePaused && len(r.Admitted) > 0 {
					t.Fatalf("seed %d step %d: admitted %v while paused", seed, step, r.Admitted)
				}
				for _, l := range r.Lapsed {
					if backInTime[l] {
						t.Fatalf("seed %d step %d: %s came back within the window and lapsed", seed, step, l)
					}
				}
				called += len(r.Called)
				for _, a := range r.Admitted {
					if backInTime[a] {
						claimed++
					}
					delete(backInTime, a)
					admissions = append(admissions, now)
				}
			}
			holders, err := c.ZCount(ctx, redisstore.HoldersKey(ev), fmt.Sprint(now+1), "+inf").Result()
			if err != nil {
				t.Fatal(err)
			}
			if holders > capacity {
				t.Fatalf("seed %d step %d: %d holders over capacity %d", seed, step, holders, capacity)
			}
		}
		// The rate: in any window of W minutes at most perMinute*W + burst.
		burst := (perMinute + 11) / 12
		for i := range admissions {
			for j := i; j < len(admissions); j++ {
				w := float64(admissions[j]-admissions[i]) / 60_000
				if float64(j-i+1) > perMinute*w+float64(burst)+1e-9 {
					t.Fatalf("seed %d: %d admissions within %.2f minutes, over the rate", seed, j-i+1, w)
				}
			}
		}
		if len(admissions) == 0 || called == 0 || claimed == 0 {
			t.Fatalf("seed %d: %d admitted, %d called, %d claimed in 400 steps; the steps exercise none of it", seed, len(admissions), called, claimed)
		}
	}
}

func TestDeletingAnEventRemovesItsTurns(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putAwayLine(t, s, ev, 1, 4)
	const now = 1_000_000
	c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u0", Score: 1}, redis.Z{Member: "u1", Score: 1})
	if r := awayTick(t, s, ev, now, 10); len(r.Called) != 2 {
		t.Fatalf("tick: %+v; want u0 and u1 called", r)
	}
	placeOf(t, s, ev, "u0", now+1) // u0 claims; u1 stays called
	c.ZAdd(ctx, redisstore.LapsedKey(ev), redis.Z{Member: "u9", Score: 5})
	if err := s.DeleteEvent(ctx, ev, now+20_000); err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, "waitq:{"+ev+"}:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{redisstore.TombstoneKey(ev)}) {
		t.Fatalf("keys left after the delete: %v; want the tombstone alone", keys)
	}
}

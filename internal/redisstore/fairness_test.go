package redisstore_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// admission is one admission as the test saw it: who, from which place.
type admission struct {
	user  string
	place int64
}

// placesBefore reads where everyone who may be admitted next stands: the
// line's places and the places called people left (claims go from those).
func placesBefore(t *testing.T, c *redis.Client, ev string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	places := map[string]int64{}
	zs, err := c.ZRangeWithScores(ctx, redisstore.WaitingKey(ev), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, z := range zs {
		places[z.Member.(string)] = int64(z.Score)
	}
	called, err := c.HGetAll(ctx, redisstore.CallPlacesKey(ev)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for u, p := range called {
		places[u], _ = strconv.ParseInt(p, 10, 64)
	}
	return places
}

// bruteForce counts, for each admission, the earlier admissions placed
// after it, and their sum: the inverted pairs, pair by pair.
func bruteForce(seq []admission) (pairs int64, each map[string]int64) {
	each = map[string]int64{}
	for j, b := range seq {
		for _, a := range seq[:j] {
			if a.place > b.place {
				each[b.user]++
				pairs++
			}
		}
	}
	return pairs, each
}

// TestReportCountsInvertedPairsAsABruteForceDoes drives random lines (joins
// stamped in random order, ingested late, leaves, people away called and
// claiming their turns later; every other line with the fast track, which
// admits as joins are written) and checks the report's pair count, its
// Kendall tau and each admitted person's own count against a count of
// every pair.
func TestReportCountsInvertedPairsAsABruteForceDoes(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 49))
			ev := testenv.EventID(t)
			if _, err := s.PutEvent(ctx, queue.Event{ID: ev, Capacity: 1 + rng.IntN(3), StaySeconds: 5, State: queue.StateOpen,
				Partitions: 1, Away: queue.DefaultAway()}); err != nil {
				t.Fatal(err)
			}
			ft := s
			if seed%2 == 1 {
				ft = withFastTrack(t, s, 2)
			}
			seq := driveRandomLine(t, ft, c, ev, rng)
			want, each := bruteForce(seq)
			r, err := s.FairnessReport(ctx, ev, 1e9)
			if err != nil {
				t.Fatal(err)
			}
			n := int64(len(seq))
			if r.Order.Admissions != n || r.AdmittedTotal != n || r.Order.Inversions != want || !r.Order.Exact || r.TimeInLineMs.Count != n {
				t.Fatalf("report %+v; want %d admissions, %d inverted pairs (exact), %d times in line", r, n, want, n)
			}
			if tau := float64(want) / (float64(n) * float64(n-1) / 2); math.Abs(r.Order.KendallTau-tau) > 1e-12 {
				t.Errorf("Kendall tau %v, want %v", r.Order.KendallTau, tau)
			}
			if want == 0 {
				t.Errorf("a line with no inversion: the drive does not test the count")
			}
			for _, a := range seq {
				o, err := s.AdmittedOrder(ctx, ev, a.user)
				if err != nil || o.OvertakenBy != each[a.user] || o.JoinedAt != a.place {
					t.Fatalf("%s: %+v, %v; want joined at %d, overtaken by %d", a.user, o, err, a.place, each[a.user])
				}
			}
			t.Logf("%d admissions, %d inverted pairs, old count %d", n, want, r.Order.OvertakenJoins)
		})
	}
	if _, err := s.AdmittedOrder(ctx, "nobody-"+testenv.EventID(t), "u1"); !errors.Is(err, queue.ErrNotAdmitted) {
		t.Errorf("someone never admitted: %v, want ErrNotAdmitted", err)
	}
}

// members reads a sorted set's members.
func members(t *testing.T, c *redis.Client, key string) map[string]bool {
	t.Helper()
	us, err := c.ZRange(context.Background(), key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, u := range us {
		m[u] = true
	}
	return m
}

// ingestAdmissions ingests msgs at now and returns whom the fast track
// admitted (if the store has it on), in the admission step's order: the
// claims, then the line's head, each by place (ties by user id). Every
// user of the drive joins once, so the new holders are those admitted.
func ingestAdmissions(t *testing.T, s *redisstore.Store, c *redis.Client, ev string, now int64, msgs []queue.Message) []admission {
	places, claims, held := placesBefore(t, c, ev), members(t, c, redisstore.ClaimsKey(ev)), members(t, c, redisstore.HoldersKey(ev))
	for _, m := range msgs {
		if _, ok := places[m.UserID]; !ok && m.Op == queue.OpJoin {
			places[m.UserID] = m.TS
		}
	}
	ingest(t, s, now, msgs...)
	var out []admission
	for u := range members(t, c, redisstore.HoldersKey(ev)) {
		if !held[u] {
			out = append(out, admission{u, places[u]})
		}
	}
	slices.SortFunc(out, func(a, b admission) int {
		if ca, cb := claims[a.user], claims[b.user]; ca != cb {
			if ca {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.place, b.place), cmp.Compare(a.user, b.user))
	})
	return out
}

// driveRandomLine runs 60 rounds of random joins (stamped up to 8 s in the
// past: late), leaves, people going away and coming back, and monitor
// ticks, and returns the admissions in order with their places.
func driveRandomLine(t *testing.T, s *redisstore.Store, c *redis.Client, ev string, rng *rand.Rand) []admission {
	ctx := context.Background()
	var seq []admission
	var waiting []string
	next, now := 0, int64(1_000_000)
	for range 60 {
		var msgs []queue.Message
		for range rng.IntN(4) {
			u := fmt.Sprintf("u%d", next)
			next++
			msgs = append(msgs, msg(queue.OpJoin, ev, u, now-rng.Int64N(8000)))
			waiting = append(waiting, u)
		}
		if len(waiting) > 0 && rng.IntN(4) == 0 {
			msgs = append(msgs, msg(queue.OpLeave, ev, waiting[rng.IntN(len(waiting))], now))
		}
		seq = append(seq, ingestAdmissions(t, s, c, ev, now, msgs)...)
		if len(waiting) > 0 && rng.IntN(3) == 0 { // someone's page is gone
			c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: waiting[rng.IntN(len(waiting))], Score: float64(now - graceMs - 1)})
		}
		called, _ := c.ZRange(ctx, redisstore.CalledKey(ev), 0, -1).Result()
		for _, u := range called {
			if rng.IntN(2) == 0 { // back: a poll claims the turn
				placeOf(t, s, ev, u, now)
			}
		}
		places := placesBefore(t, c, ev)
		for _, u := range awayTick(t, s, ev, now, 1+rng.IntN(3)).Admitted {
			seq = append(seq, admission{u, places[u]})
		}
		now += 1000 + rng.Int64N(3000)
	}
	return seq
}

// TestOrderKeepsTheLatestAdmissionsAndSaysWhenACountIsShort: past the admissions
// kept (10,000), the oldest leave with their people's own counts; an
// admission placed below them makes the report say its count is a lower
// bound. The time in line is counted in its power-of-two bucket.
func TestOrderKeepsTheLatestAdmissionsAndSaysWhenACountIsShort(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	const n = 10_010
	if _, err := s.PutEvent(ctx, queue.Event{ID: ev, Capacity: 2 * n, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	join(t, s, ev, 1, n+1, 1) // u<i> stamped i
	if r := tick(t, s, ev, n+1000, 2*n); len(r.Admitted) != n {
		t.Fatalf("tick: %d admitted, want %d", len(r.Admitted), n)
	}
	join(t, s, ev, 0, 1, 0) // late: stamped before everyone, below the places kept
	tick(t, s, ev, n+2000, 2*n)
	r, err := s.FairnessReport(ctx, ev, n+3000)
	if err != nil {
		t.Fatal(err)
	}
	if r.Order.Admissions != n+1 || r.Order.Inversions != 10_000 || r.Order.Exact {
		t.Errorf("order %+v; want %d admissions, 10,000 pairs counted, not exact", r.Order, n+1)
	}
	if w := r.TimeInLineMs; w.Count != n+1 || w.P50 != 8192 || w.P90 != 16384 {
		t.Errorf("time in line %+v; want p50 8192 ms, p90 16384 ms", w)
	}
	if _, err := s.AdmittedOrder(ctx, ev, "u1"); !errors.Is(err, queue.ErrNotAdmitted) {
		t.Errorf("u1, trimmed: %v, want ErrNotAdmitted", err)
	}
	if o, err := s.AdmittedOrder(ctx, ev, "u0"); err != nil || o.OvertakenBy != 10_000 || o.JoinedAt != 0 || o.DrawnPlace {
		t.Errorf("u0: %+v, %v; want 10,000 counted", o, err)
	}
}

// TestADropsReportShowsItsDraw: a drop's report is of kind drop, its draw
// sealed (no seed, not verified) before the opening and verified after;
// drawn places are admitted in drawn order (no inversion), told as drawn
// to their people, their time in line counted from the opening.
func TestADropsReportShowsItsDraw(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	seed := putDrop(t, s, ev, 10)
	var pre []queue.Message
	for i := range 5 {
		pre = append(pre, queue.Message{V: 1, Op: queue.OpJoin, EventID: ev, UserID: fmt.Sprintf("p%d", i), TS: opens - 30_000 + int64(i), ID: "x"})
	}
	ingest(t, s, opens-1000, pre...)
	r, err := s.FairnessReport(ctx, ev, opens-1)
	if err != nil || r.Kind != "drop" || r.Draw == nil || r.Draw.Seed != "" || r.Draw.Verified || r.Draw.PrequeueSize != 5 {
		t.Fatalf("before the opening: %+v, %v", r, err)
	}
	tick(t, s, ev, opens+100, 10)
	r, err = s.FairnessReport(ctx, ev, opens+200)
	if err != nil || r.Draw.Seed != seed.Hex() || !r.Draw.Verified || r.Order.Admissions != 5 || r.Order.Inversions != 0 {
		t.Fatalf("after the opening: %+v, %v", r, err)
	}
	if w := r.TimeInLineMs; w.Count != 5 || w.P90 != 128 { // 100 ms after the opening
		t.Errorf("time in line %+v, want 5 within 128 ms", w)
	}
	if o, err := s.AdmittedOrder(ctx, ev, "p0"); err != nil || !o.DrawnPlace || o.JoinedAt != 0 {
		t.Errorf("p0: %+v, %v; want a drawn place", o, err)
	}
}

// TestAPersonAdmittedAgainKeepsTheCountHonest: x is admitted, releases,
// joins again and is admitted again; order keeps x at the later place, so
// a later admission placed before x's first place is counted short, and
// the report says so (not exact); one placed after it is still exact.
func TestAPersonAdmittedAgainKeepsTheCountHonest(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		lateStamp int64
		pairs     int64
		exact     bool
	}{
		{lateStamp: 5, pairs: 1, exact: false}, // before x's first place: x twice by a brute force, once here
		{lateStamp: 30, pairs: 1, exact: true}, // between x's places: x's later place only
	} {
		ev := testenv.EventID(t) + fmt.Sprint("-", tc.lateStamp)
		if _, err := s.PutEvent(ctx, queue.Event{ID: ev, Capacity: 5, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}); err != nil {
			t.Fatal(err)
		}
		ingest(t, s, 100, msg(queue.OpJoin, ev, "x", 10))
		tick(t, s, ev, 200, 10)
		if _, _, err := s.Release(ctx, ev, "x", 300); err != nil {
			t.Fatal(err)
		}
		ingest(t, s, 400, msg(queue.OpJoin, ev, "x", 350)) // after its served mark (200): a new visit
		tick(t, s, ev, 500, 10)
		ingest(t, s, 600, msg(queue.OpJoin, ev, "late", tc.lateStamp))
		tick(t, s, ev, 700, 10)
		r, err := s.FairnessReport(ctx, ev, 800)
		if err != nil || r.Order.Admissions != 3 || r.Order.Inversions != tc.pairs || r.Order.Exact != tc.exact {
			t.Errorf("late join stamped %d: %+v, %v; want %d pairs, exact %v", tc.lateStamp, r.Order, err, tc.pairs, tc.exact)
		}
	}
}

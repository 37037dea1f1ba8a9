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

// arrivalT0 is when the arrival tests admit their first holders: holds of
// 60 s end at arrivalT0 + 60 s, the arrival window of 10 s closes at
// arrivalT0 + 10 s.
const arrivalT0 = int64(1_000_000)

// putArrivalLine registers ev with capacity, holds of 60 s, an arrival
// window of 10 s and rate (0: none), and queues u0…u(n-1) stamped 1…n.
func putArrivalLine(t *testing.T, s *redisstore.Store, ev string, capacity, rate, n int) {
	t.Helper()
	e := queue.Event{ID: ev, Capacity: capacity, StaySeconds: 60, AdmitPerMinute: rate, State: queue.StateOpen, Partitions: 1, ArrivalSeconds: 10}
	if _, err := s.PutEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	join(t, s, ev, 0, n, 1)
}

// arrive reports user's arrival for the hold ending at holdUntil.
func arrive(t *testing.T, s *redisstore.Store, ev, user string, holdUntil, now int64) (arrived, first bool) {
	t.Helper()
	arrived, first, err := s.Arrive(context.Background(), ev, user, holdUntil, now)
	if err != nil {
		t.Fatal(err)
	}
	return arrived, first
}

func TestANoShowFreesTheSlotAnArrivalKeepsIt(t *testing.T) {
	s, _ := newStore(t)
	ev := testenv.EventID(t)
	putArrivalLine(t, s, ev, 2, 0, 4)
	end := arrivalT0 + 60_000
	if r := awayTick(t, s, ev, arrivalT0, 10); !slices.Equal(r.Admitted, []string{"u0", "u1"}) {
		t.Fatalf("first tick %+v, want u0 and u1 admitted", r)
	}
	if a, first := arrive(t, s, ev, "u0", end, arrivalT0+3_000); !a || !first {
		t.Fatalf("u0's arrival: %v %v, want arrived, first", a, first)
	}
	if r := awayTick(t, s, ev, arrivalT0+9_999, 10); r.NoShows != 0 || len(r.Admitted) != 0 {
		t.Fatalf("tick within the window %+v, want nobody freed", r)
	}
	r := awayTick(t, s, ev, arrivalT0+10_000, 10)
	if r.NoShows != 1 || !slices.Equal(r.Admitted, []string{"u2"}) {
		t.Fatalf("tick at the window's close %+v, want u1 freed, u2 admitted", r)
	}
	arrive(t, s, ev, "u2", r.ExpiresAt, arrivalT0+10_000)
	if p := placeOf(t, s, ev, "u1", arrivalT0+10_001); p.StayUntil > 0 {
		t.Fatalf("u1 after the window: %+v, want no hold", p)
	}
	l, err := s.Released(context.Background(), ev, arrivalT0+10_001)
	if err != nil || !slices.Equal(l, []queue.ReleasedAdmission{{UserID: "u1", StayUntil: end}}) {
		t.Fatalf("released %v %v, want u1's admission listed", l, err)
	}
	if a, _ := arrive(t, s, ev, "u1", end, arrivalT0+10_002); a {
		t.Fatal("a no-show's late arrival was taken")
	}
	// u0 arrived: the slot is theirs to the end of the hold.
	for _, now := range []int64{arrivalT0 + 30_000, end - 1} {
		if r := awayTick(t, s, ev, now, 10); r.NoShows != 0 {
			t.Fatalf("tick at %d: %+v, want nobody freed", now, r)
		}
		if p := placeOf(t, s, ev, "u0", now); p.StayUntil != end {
			t.Fatalf("u0 at %d: %+v, want holding to %d", now, p, end)
		}
	}
	st, err := s.EventStatus(context.Background(), ev, end-1)
	if err != nil || st.Arrivals == nil || *st.Arrivals != (queue.Arrivals{ArrivedTotal: 2, NoShowTotal: 1}) {
		t.Fatalf("status arrivals %+v %v, want two arrived, one no-show", st.Arrivals, err)
	}
}

func TestARecordedNoShowIsReleasedInTheLogBeforeItsSlotIsFree(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putArrivalLine(t, s, ev, 2, 0, 4)
	s = mustNew(t, c, redisstore.Options{FastTrack: 10}) // a release hands on
	step := func(now int64) (queue.TickResult, queue.Changes) {
		t.Helper()
		res, cs, err := s.TickStep(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: now, AdmitBatch: 10})
		if err != nil {
			t.Fatal(err)
		}
		return res[0], cs[0]
	}
	_, cs := step(arrivalT0)
	if _, err := s.MarkRecorded(ctx, []queue.Marks{{EventID: ev, Users: cs.Admitted}}); err != nil {
		t.Fatal(err)
	}
	arrive(t, s, ev, "u0", arrivalT0+60_000, arrivalT0+1_000)
	r, cs := step(arrivalT0 + 10_000)
	var releases []queue.Message
	for _, m := range cs.Records {
		if m.Op == queue.OpRelease {
			releases = append(releases, m)
		}
	}
	if r.NoShows != 1 || len(r.Admitted) != 0 || len(releases) != 1 || releases[0].UserID != "u1" || releases[0].ServedMark != arrivalT0 || len(cs.Freeing) != 1 {
		t.Fatalf("tick %+v, changes %+v: want u1's release recorded (served mark %d), its slot still counted", r, cs, arrivalT0)
	}
	if n := c.ZCard(ctx, redisstore.FreeingKey(ev)).Val(); n != 1 {
		t.Fatalf("freeing %d before the record is marked, want 1", n)
	}
	if r, _ := step(arrivalT0 + 10_500); len(r.Admitted) != 0 {
		t.Fatalf("tick before the mark %+v: the slot was handed on before its release was in the log", r)
	}
	if _, err := s.MarkRecorded(ctx, []queue.Marks{{EventID: ev, Freeing: cs.Freeing}}); err != nil {
		t.Fatal(err)
	}
	_, hc, err := s.HandOn(ctx, ev, arrivalT0+10_600)
	if err != nil || !slices.Equal(hc.Fresh, []string{"u2"}) {
		t.Fatalf("hand on %+v %v, want u2 admitted once the release is marked", hc, err)
	}
}

func TestArrivalIsMarkedOnlyForTheCurrentAdmission(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putArrivalLine(t, s, ev, 1, 0, 2)
	end := arrivalT0 + 60_000
	awayTick(t, s, ev, arrivalT0, 10)
	for _, tc := range []struct {
		name      string
		user      string
		holdUntil int64
	}{{"another end", "u0", end - 1}, {"a user not holding", "u1", end}, {"nobody", "nobody", end}} {
		if a, _ := arrive(t, s, ev, tc.user, tc.holdUntil, arrivalT0+1_000); a {
			t.Errorf("%s: arrived", tc.name)
		}
	}
	if a, first := arrive(t, s, ev, "u0", end, arrivalT0+1_000); !a || !first {
		t.Fatalf("u0's arrival %v %v", a, first)
	}
	if a, first := arrive(t, s, ev, "u0", end, arrivalT0+2_000); !a || first {
		t.Fatalf("u0's second report %v %v, want arrived, not first", a, first)
	}
	if n, _ := c.HGet(ctx, redisstore.StatsKey(ev), "arrivedTotal").Int(); n != 1 {
		t.Fatalf("arrivedTotal %d, want 1", n)
	}
	if _, _, err := s.Release(ctx, ev, "u0", arrivalT0+3_000); err != nil {
		t.Fatal(err)
	}
	if a, _ := arrive(t, s, ev, "u0", end, arrivalT0+4_000); a {
		t.Fatal("a released admission arrived")
	}
	if _, _, err := s.Arrive(ctx, "nosuchevent", "u0", end, arrivalT0); err == nil {
		t.Fatal("an arrival in an unknown event was taken")
	}
	// An unrecorded hold (never told, no token) does not arrive.
	ev2 := testenv.EventID(t) + "b"
	putArrivalLine(t, s, ev2, 1, 0, 1)
	if _, _, err := s.TickStep(ctx, queue.TickRequest{EventIDs: []string{ev2}, NowMs: arrivalT0, AdmitBatch: 10}); err != nil {
		t.Fatal(err)
	}
	if a, _ := arrive(t, s, ev2, "u0", end, arrivalT0+1_000); a {
		t.Fatal("an unrecorded admission arrived")
	}
}

func TestWithoutAnArrivalWindowNobodyIsFreed(t *testing.T) {
	s, _ := newStore(t)
	ev := testenv.EventID(t)
	putLine(t, s, ev, 1, 60, 2)
	awayTick(t, s, ev, arrivalT0, 10)
	if r := awayTick(t, s, ev, arrivalT0+59_000, 10); r.NoShows != 0 || len(r.Admitted) != 0 {
		t.Fatalf("tick %+v, want u0 holding to the end", r)
	}
	st, err := s.EventStatus(context.Background(), ev, arrivalT0)
	if err != nil || st.Arrivals != nil {
		t.Fatalf("status arrivals %+v %v, want none", st.Arrivals, err)
	}
}

// admittedWith returns how many a first tick admits from a line of 100
// into 100 slots at 60 a minute (a burst of 5), after arrived arrivals
// and missed no-shows.
func admittedWith(t *testing.T, s *redisstore.Store, c *redis.Client, ev string, arrived, missed int) int {
	t.Helper()
	putArrivalLine(t, s, ev, 100, 60, 100)
	c.HSet(context.Background(), redisstore.StatsKey(ev), "arrivedTotal", arrived, "noShowTotal", missed)
	return len(awayTick(t, s, ev, arrivalT0, 100).Admitted)
}

func TestTheRateIsMadeUpForTheNoShows(t *testing.T) {
	s, c := newStore(t)
	ev := testenv.EventID(t)
	for i, tc := range []struct{ arrived, missed, want int }{
		{0, 0, 5},    // nothing measured
		{10, 9, 5},   // 19 resolved: not yet
		{15, 5, 7},   // a quarter: 80 a minute, a burst of 7
		{10, 10, 10}, // half: doubled
		{0, 30, 10},  // all: doubled at most
	} {
		if got := admittedWith(t, s, c, fmt.Sprintf("%s%d", ev, i), tc.arrived, tc.missed); got != tc.want {
			t.Errorf("%d arrived, %d no-shows: %d admitted, want %d", tc.arrived, tc.missed, got, tc.want)
		}
	}
}

// TestTheMakeUpNeverExceedsTheCapacity runs random interleavings of ticks
// (recorded or not), arrivals, releases, marks and joins on an event whose
// rate is made up for its no-shows: the holders (active and freeing) never
// exceed the capacity.
func TestTheMakeUpNeverExceedsTheCapacity(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(47, 1))
	for run := range 4 {
		ev := fmt.Sprintf("%s%d", testenv.EventID(t), run)
		putArrivalLine(t, s, ev, 3, 600, 40)
		c.HSet(ctx, redisstore.StatsKey(ev), "arrivedTotal", 10, "noShowTotal", 30)
		now, joined := arrivalT0, 40
		var marks queue.Marks
		for range 300 {
			now += rnd.Int64N(3_000)
			switch rnd.IntN(6) {
			case 0:
				awayTick(t, s, ev, now, 10)
			case 1:
				_, cs, err := s.TickStep(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: now, AdmitBatch: 10})
				if err != nil {
					t.Fatal(err)
				}
				marks.Users = append(marks.Users, cs[0].Admitted...)
				marks.Freeing = append(marks.Freeing, cs[0].Freeing...)
			case 2:
				marks.EventID = ev
				if _, err := s.MarkRecorded(ctx, []queue.Marks{marks}); err != nil {
					t.Fatal(err)
				}
				marks = queue.Marks{}
			case 3:
				for _, z := range c.ZRangeWithScores(ctx, redisstore.HoldersKey(ev), 0, -1).Val() {
					if rnd.IntN(2) == 0 {
						arrive(t, s, ev, z.Member.(string), int64(z.Score), now)
					}
				}
			case 4:
				if _, _, err := s.Release(ctx, ev, fmt.Sprintf("u%d", rnd.IntN(joined)), now); err != nil {
					t.Fatal(err)
				}
			case 5:
				join(t, s, ev, joined, joined+3, now)
				joined += 3
			}
			holders := c.ZCard(ctx, redisstore.HoldersKey(ev)).Val() + c.ZCard(ctx, redisstore.FreeingKey(ev)).Val()
			if holders > 3 {
				t.Fatalf("run %d at %d: %d holders, capacity 3", run, now, holders)
			}
		}
	}
}

// TestARebuildFreesNoneItRestoresAsANoShow: arrivals are not in the log, so
// after Redis was lost the holders a rebuild restores keep their slots to
// the end of their holds; an admission after the rebuild is looked at.
func TestARebuildFreesNoneItRestoresAsANoShow(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putArrivalLine(t, s, ev, 2, 0, 0)
	e, err := s.Event(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	c.FlushAll(ctx)
	end := arrivalT0 + 60_000
	st := queue.Rebuilt{Event: e, ConfiguredAt: 1, Holders: map[string]int64{"u0": end}, Served: map[string]int64{"u0": arrivalT0},
		Waiting: map[string]int64{"u1": 2}, AdmittedTotal: 1}
	if err := s.BeginRebuild(ctx, ev, arrivalT0+1_000); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteRebuilt(ctx, st, arrivalT0+1_000); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRebuild(ctx, ev); err != nil {
		t.Fatal(err)
	}
	r := awayTick(t, s, ev, arrivalT0+2_000, 10)
	if !slices.Equal(r.Admitted, []string{"u1"}) {
		t.Fatalf("tick after the rebuild %+v, want u1 admitted", r)
	}
	if r := awayTick(t, s, ev, arrivalT0+30_000, 10); r.NoShows != 1 || r.Holders != 1 {
		t.Fatalf("tick past the windows %+v, want u1 freed, u0 (restored) holding", r)
	}
	if p := placeOf(t, s, ev, "u0", end-1); p.StayUntil != end {
		t.Fatalf("u0 restored: %+v, want holding to %d", p, end)
	}
}

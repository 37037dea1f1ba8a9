package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

var putLine = testsys.PutLine

func tick(t *testing.T, s *redisstore.Store, ev string, now int64, batch int) queue.TickResult {
	t.Helper()
	res, err := s.Tick(context.Background(), queue.TickRequest{EventIDs: []string{ev}, NowMs: now, AdmitBatch: batch, PresenceCutoffMs: 0, SweepLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

func TestAdmitFillsFreeSlotsFromTheHead(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 3, 10, 6)
	c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u0", Score: 1})

	r := tick(t, s, ev, 1000, 2) // batch caps it at 2
	if !slices.Equal(r.Admitted, []string{"u0", "u1"}) || r.ExpiresAt != 11000 {
		t.Fatalf("first tick %+v", r)
	}
	r = tick(t, s, ev, 2000, 10) // one slot left
	if !slices.Equal(r.Admitted, []string{"u2"}) || r.ExpiresAt != 12000 {
		t.Fatalf("second tick %+v", r)
	}
	if r = tick(t, s, ev, 3000, 10); len(r.Admitted) != 0 {
		t.Fatalf("admitted over capacity: %+v", r)
	}
	// u0 and u1 hold until 11000: at 11000 their holds end and two more get in.
	r = tick(t, s, ev, 11000, 10)
	if !slices.Equal(r.Admitted, []string{"u3", "u4"}) || r.Expired != 2 || r.Holders != 3 || r.Waiting != 1 {
		t.Fatalf("tick after expiry %+v", r)
	}
	st, _ := s.EventStatus(ctx, ev, 11000)
	if st.AdmittedTotal != 5 || st.Holders != 3 || st.Waiting != 1 {
		t.Fatalf("status %+v", st)
	}
	if c.ZScore(ctx, redisstore.SeenKey(ev), "u0").Err() != redis.Nil {
		t.Error("an admitted user's presence was kept")
	}
	// Each admission's time is the served mark (the joins were stamped
	// 1…5, before it).
	served, _ := c.ZRangeWithScores(ctx, redisstore.ServedKey(ev), 0, -1).Result()
	if len(served) != 5 || served[0].Member != "u0" || served[0].Score != 1000 || served[4].Member != "u4" || served[4].Score != 11000 {
		t.Errorf("served record %v", served)
	}
	if r := tick(t, s, ev+"-none", 1, 1); !r.Unknown {
		t.Errorf("unknown event: %+v", r)
	}
}

// TestRetriedJoinNeverQueuesAgainAfterTheRelease is the fault campaign's
// finding: a join answered 503 after the publish timed out may still land,
// and the client's retry, stamped later, lands too. If the first was
// admitted and released before the retry was ingested, the retry must not
// queue the user again: it was sent before the admission, so it is the
// same visit. A join sent after the release still queues again.
func TestRetriedJoinNeverQueuesAgainAfterTheRelease(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 1, 10, 1) // u0, stamped 1: the join that timed out
	if r := tick(t, s, ev, 1000, 10); !slices.Equal(r.Admitted, []string{"u0"}) {
		t.Fatalf("tick %+v", r)
	}
	if ok, _, err := s.Release(ctx, ev, "u0", 1500); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	// The retry, stamped 400 (after the first, before the admission),
	// reaches the consumer late.
	res, err := s.Ingest(ctx, []queue.Message{msg(queue.OpJoin, ev, "u0", 400)}, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if res.Joined != 0 || res.Ignored != 1 || len(line(t, c, ev)) != 0 {
		t.Fatalf("the retry queued the user again: %+v, line %v", res, line(t, c, ev))
	}
	if r := tick(t, s, ev, 2500, 10); len(r.Admitted) != 0 {
		t.Fatalf("admitted twice for one visit: %+v", r)
	}
	// A new join after the release queues again.
	if res, err := s.Ingest(ctx, []queue.Message{msg(queue.OpJoin, ev, "u0", 1600)}, 3000); err != nil || res.Joined != 1 {
		t.Fatalf("a join after the release: %+v %v", res, err)
	}
}

// TestRetryOfTheAdmittedVisitSentAfterTheAdmission: a visit's first try
// (answered 503, landed) is admitted and released; its retry, stamped after
// the admission and carrying the same visit, queues nobody; a new visit
// queues again. (Without a visit the stamp alone cannot tell them apart.)
func TestRetryOfTheAdmittedVisitSentAfterTheAdmission(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 1, 10, 0)
	visit := func(ts int64, v string) queue.Message {
		m := msg(queue.OpJoin, ev, "u0", ts)
		m.JoinKey = v
		return m
	}
	if res, err := s.Ingest(ctx, []queue.Message{visit(100, "visit-a")}, 200); err != nil || res.Joined != 1 {
		t.Fatalf("the first try: %+v %v", res, err)
	}
	if r := tick(t, s, ev, 1000, 10); !slices.Equal(r.Admitted, []string{"u0"}) {
		t.Fatalf("tick %+v", r)
	}
	if ok, _, err := s.Release(ctx, ev, "u0", 1500); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	// The retry was sent after the admission (stamped 1200).
	res, err := s.Ingest(ctx, []queue.Message{visit(1200, "visit-a")}, 2000)
	if err != nil || res.Joined != 0 || res.Ignored != 1 || len(line(t, c, ev)) != 0 {
		t.Fatalf("the retry queued the visit again: %+v %v, line %v", res, err, line(t, c, ev))
	}
	if r := tick(t, s, ev, 2500, 10); len(r.Admitted) != 0 {
		t.Fatalf("admitted twice for one visit: %+v", r)
	}
	// A new visit after the release queues again.
	if res, err := s.Ingest(ctx, []queue.Message{visit(2600, "visit-b")}, 3000); err != nil || res.Joined != 1 {
		t.Fatalf("a new visit: %+v %v", res, err)
	}
}

func TestReleaseIsIdempotentAndOnlyFreesHeldSlots(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 1, 10, 3)
	tick(t, s, ev, 1000, 10) // u0 holds the only slot
	for i, want := range []bool{true, false} {
		ok, _, err := s.Release(ctx, ev, "u0", 2000)
		if err != nil || ok != want {
			t.Fatalf("release %d = %v, %v; want %v", i+1, ok, err, want)
		}
	}
	if ok, _, _ := s.Release(ctx, ev, "u1", 2000); ok {
		t.Fatal("a waiting user released a slot")
	}
	// Exactly one slot came free.
	if r := tick(t, s, ev, 2000, 10); !slices.Equal(r.Admitted, []string{"u1"}) {
		t.Fatalf("after the releases %+v", r)
	}
	// Releasing after the stay ended frees nothing (the slot is already free).
	if ok, _, _ := s.Release(ctx, ev, "u1", 20000); ok {
		t.Fatal("an expired hold was released as held")
	}
}

func TestSweepRemovesOnlyUsersGoneLongerThanTheGrace(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 1, 10, 3)
	// u0 was last seen at 100, u1 at 900; u2 never connected.
	c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u0", Score: 100}, redis.Z{Member: "u1", Score: 900})
	res, err := s.Tick(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: 1000, AdmitBatch: 0, PresenceCutoffMs: 500, SweepLimit: 100}) // cutoff 500, batch 0: no admission
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res[0].Swept, []string{"u0"}) || len(res[0].Admitted) != 0 {
		t.Fatalf("tick %+v", res[0])
	}
	line, _ := c.ZRange(ctx, redisstore.WaitingKey(ev), 0, -1).Result()
	if !slices.Equal(line, []string{"u1", "u2"}) {
		t.Fatalf("line %v", line)
	}
}

// TestRacingMonitorsNeverExceedCapacity runs three monitors ticking over one
// event 1000 times while holders release at random; after every tick the
// holders must fit the capacity and nobody may be admitted twice.
func TestRacingMonitorsNeverExceedCapacity(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	const capacity, users = 7, 3000
	putLine(t, s, ev, capacity, 3600, users)

	var (
		now      atomic.Int64
		admitted sync.Map
		dups     atomic.Int64
		over     atomic.Int64
		wg       sync.WaitGroup
	)
	now.Store(1000)
	for m := range 3 {
		wg.Go(func() {
			for range 1000 {
				r := tick(t, s, ev, now.Add(1), 3)
				for _, u := range r.Admitted {
					if _, loaded := admitted.LoadOrStore(u, m); loaded {
						dups.Add(1)
					}
				}
				// Some holder finishes, so slots keep turning over.
				for _, u := range c.ZRandMember(ctx, redisstore.HoldersKey(ev), 1).Val() {
					if _, _, err := s.Release(ctx, ev, u, now.Load()); err != nil {
						t.Error(err)
					}
				}
				if n := c.ZCard(ctx, redisstore.HoldersKey(ev)).Val(); n > capacity {
					over.Add(1)
				}
			}
		})
	}
	wg.Wait()
	total := 0
	admitted.Range(func(any, any) bool { total++; return true })
	st, _ := s.EventStatus(ctx, ev, now.Load())
	t.Logf("3 monitors × 1000 ticks: %d admitted, %d holding, %d waiting", total, st.Holders, st.Waiting)
	if over.Load() != 0 || dups.Load() != 0 {
		t.Fatalf("capacity exceeded after %d ticks, %d users admitted twice", over.Load(), dups.Load())
	}
	if int64(total) != st.AdmittedTotal || st.Holders > capacity || int64(total)+st.Waiting != users {
		t.Fatalf("admitted %d, counter %d, holding %d, waiting %d of %d users", total, st.AdmittedTotal, st.Holders, st.Waiting, users)
	}
	if total < 1000 {
		t.Fatalf("only %d admitted: the monitors hardly raced", total)
	}
}

// TestPausedEventAdmitsNobodyAndKeepsTheLine: while an event is paused its
// line keeps growing in stamp order and nobody is admitted, with free slots;
// once open again the line is admitted from its head.
func TestPausedEventAdmitsNobodyAndKeepsTheLine(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 3, 10, 2) // u0, u1 stamped 1, 2
	e, err := s.Event(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	e.State = queue.StatePaused
	if _, err := s.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	if r := tick(t, s, ev, 1000, 10); len(r.Admitted) != 0 || r.Waiting != 2 {
		t.Fatalf("a paused event admitted: %+v", r)
	}
	if _, err := s.Ingest(ctx, []queue.Message{msg(queue.OpJoin, ev, "late", 5), msg(queue.OpJoin, ev, "early", 0)}, 1000); err != nil {
		t.Fatal(err)
	}
	if r := tick(t, s, ev, 2000, 10); len(r.Admitted) != 0 || r.Waiting != 4 {
		t.Fatalf("a paused event admitted: %+v", r)
	}
	e.State = queue.StateOpen
	if _, err := s.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	if r := tick(t, s, ev, 3000, 10); !slices.Equal(r.Admitted, []string{"early", "u0", "u1"}) || r.Waiting != 1 {
		t.Fatalf("after resuming: %+v", r)
	}
}

// TestEveryWayInKeepsTheCapacity races the three ways into a slot: monitor
// ticks, releases that hand the slot on (fast track) and joins written with
// the fast track. Holders never exceed the capacity, and every admission,
// as published on the admissions channel, goes to a different join.
func TestEveryWayInKeepsTheCapacity(t *testing.T) {
	s, c := newStore(t)
	fast := withFastTrack(t, s, 3)
	ctx := context.Background()
	ev := testenv.EventID(t)
	const capacity, users, late = 7, 2000, 500
	putLine(t, s, ev, capacity, 3600, users)

	var (
		notices sync.Map // user → times admitted
		seen    atomic.Int64
	)
	sctx, stop := context.WithCancel(ctx)
	subscribed := make(chan error, 1)
	go func() {
		subscribed <- fast.SubscribeAdmissions(sctx, func(a queue.AdmissionNotice) {
			for _, u := range a.Users {
				n, _ := notices.LoadOrStore(u, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
				seen.Add(1)
			}
		})
	}()
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		n := c.PubSubNumSub(ctx, redisstore.AdmissionsChannel).Val()[redisstore.AdmissionsChannel]
		return n >= 1, "not subscribed yet"
	})

	var (
		now  atomic.Int64
		over atomic.Int64
		wg   sync.WaitGroup
	)
	now.Store(1000)
	checkCapacity := func() {
		if n := c.ZCard(ctx, redisstore.HoldersKey(ev)).Val(); n > capacity {
			over.Add(1)
		}
	}
	for range 3 {
		wg.Go(func() {
			for range 500 {
				tick(t, s, ev, now.Add(1), 3)
				checkCapacity()
				for _, u := range c.ZRandMember(ctx, redisstore.HoldersKey(ev), 1).Val() {
					if _, _, err := fast.Release(ctx, ev, u, now.Load()); err != nil {
						t.Error(err)
					}
				}
				checkCapacity()
			}
		})
	}
	wg.Go(func() {
		for i := range late {
			m := msg(queue.OpJoin, ev, fmt.Sprintf("late%d", i), int64(users+1+i))
			if _, err := fast.Ingest(ctx, []queue.Message{m}, now.Load()); err != nil {
				t.Error(err)
			}
			checkCapacity()
		}
	})
	wg.Wait()
	st, _ := s.EventStatus(ctx, ev, now.Load())
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return seen.Load() == st.AdmittedTotal, fmt.Sprintf("%d notices of %d admissions", seen.Load(), st.AdmittedTotal)
	})
	stop()
	if err := <-subscribed; err != nil {
		t.Fatal(err)
	}
	twice := 0
	notices.Range(func(_, n any) bool {
		if n.(*atomic.Int64).Load() > 1 {
			twice++
		}
		return true
	})
	t.Logf("%d admitted (%d holding, %d waiting) by ticks, releases and joins", st.AdmittedTotal, st.Holders, st.Waiting)
	if over.Load() != 0 || twice != 0 {
		t.Fatalf("capacity exceeded %d times, %d users admitted twice", over.Load(), twice)
	}
	if st.AdmittedTotal+st.Waiting != users+late || st.Holders > capacity {
		t.Fatalf("admitted %d + waiting %d ≠ %d joins, or %d holding", st.AdmittedTotal, st.Waiting, users+late, st.Holders)
	}
	if st.AdmittedTotal < 1000 {
		t.Fatalf("only %d admitted: the ways in hardly raced", st.AdmittedTotal)
	}
}

// TestLoweredRateAdmitsNoMoreThanTheNewBurst lowers the rate from 600,000
// to 60 a minute between two steps: the tokens the old rate left in the
// bucket never admit more than the new burst (5), whether the next step's
// clock is ahead of, at, or behind the last admitter's.
func TestLoweredRateAdmitsNoMoreThanTheNewBurst(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for name, skew := range map[string]int64{"ahead": 1, "same clock": 0, "behind": -500} {
		t.Run(name, func(t *testing.T) {
			ev := testenv.EventID(t)
			putLine(t, s, ev, 100_000, 600, 3000)
			e, err := s.Event(ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			e.AdmitPerMinute = 600_000 // burst 50,000
			if _, err := s.PutEvent(ctx, e); err != nil {
				t.Fatal(err)
			}
			if r := tick(t, s, ev, 10_000, 10); len(r.Admitted) != 10 {
				t.Fatalf("at 600,000 a minute: %d admitted, want the batch of 10", len(r.Admitted))
			}
			e.AdmitPerMinute = 60 // burst 5
			if _, err := s.PutEvent(ctx, e); err != nil {
				t.Fatal(err)
			}
			if r := tick(t, s, ev, 10_000+skew, 3000); len(r.Admitted) > 5 {
				t.Fatalf("after lowering the rate to 60 a minute one step admitted %d, more than the burst of 5", len(r.Admitted))
			}
		})
	}
}

// TestOlderStaySpellingIsRead: a configuration stored with holdSeconds, the
// older spelling of staySeconds, reads back and admits for that stay.
func TestOlderStaySpellingIsRead(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 3, 10, 2)
	c.HDel(ctx, redisstore.ConfigKey(ev), "staySeconds")
	c.HSet(ctx, redisstore.ConfigKey(ev), "holdSeconds", 20)
	if e, err := s.Event(ctx, ev); err != nil || e.StaySeconds != 20 {
		t.Fatalf("event %+v, %v; want a stay of 20 s", e, err)
	}
	if r := tick(t, s, ev, 1000, 10); r.ExpiresAt != 21000 {
		t.Fatalf("tick %+v, want stays until 21000", r)
	}
}

package gateway_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testredis"
	"github.com/waitq/waitq/pkg/draw"
)

// The Tracker's places (kept from the line's journal) are the store's
// (read per user, the way before it), on randomized lines: joins and
// leaves, late joins stamped before others, admissions, releases, holds
// ending, presences let go and swept, a drop's pre-queue and its drawn
// places, a rebuild. Each step's statuses are read in random slices, as
// rounds read them, so that users stand at different points of the journal.
func TestTrackerAgreesWithTheStore(t *testing.T) {
	for name, client := range testredis.Backends() {
		for _, drop := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/drop=%v", name, drop), func(t *testing.T) {
				for seed := range uint64(3) {
					agree(t, client(t), drop, seed)
				}
			})
		}
	}
}

const opensAt = int64(1_800_000_000_000)

func agree(t *testing.T, c redis.UniversalClient, drop bool, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 30))
	store, err := redisstore.New(c, redisstore.Options{FastTrack: 2})
	if err != nil {
		t.Fatal(err)
	}
	ev := fmt.Sprintf("%s-%d", testenv.EventID(t), seed)
	e := queue.Event{ID: ev, Capacity: 2 + rng.IntN(4), StaySeconds: 20, State: queue.StateOpen, Partitions: 1}
	now := opensAt - 30_000
	if drop {
		s, err := draw.NewSeed()
		if err != nil {
			t.Fatal(err)
		}
		e.Schedule, e.Seed = queue.Schedule{OpensAt: opensAt, PrequeueSeconds: 60}, &s
	}
	if _, err := store.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	trackers := []*gateway.Tracker{gateway.NewTracker(store), gateway.NewTracker(store)}
	held := map[string]*gateway.Tracker{} // user -> the gateway holding their socket
	const pool = 80
	user := func(i int) string { return fmt.Sprintf("u%02d", i) }
	stamp := now
	compared := 0
	for step := range 160 {
		now += int64(rng.IntN(1500))
		switch op := rng.IntN(10); {
		case op < 4: // joins (some stamped before earlier ones) and leaves
			var msgs []queue.Message
			for range 1 + rng.IntN(6) {
				u := user(rng.IntN(pool))
				if rng.IntN(5) == 0 {
					msgs = append(msgs, queue.Message{V: 1, Op: queue.OpLeave, EventID: ev, UserID: u, TS: now, ID: "x"})
					continue
				}
				stamp = max(stamp, now-int64(rng.IntN(3000)))
				ts := stamp - int64(rng.IntN(4))*int64(rng.IntN(2000)) // late: before joins already in line
				msgs = append(msgs, queue.Message{V: 1, Op: queue.OpJoin, EventID: ev, UserID: u, TS: ts, ID: "x"})
			}
			if _, err := store.Ingest(ctx, msgs, now); err != nil {
				t.Fatal(err)
			}
		case op < 6: // the slot monitor: holds end, admissions, presences swept
			cutoff := int64(0)
			if rng.IntN(2) == 0 {
				cutoff = now - int64(rng.IntN(4000))
			}
			if _, err := store.Tick(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: now, AdmitBatch: 1 + rng.IntN(3), PresenceCutoffMs: cutoff, SweepLimit: 100}); err != nil {
				t.Fatal(err)
			}
		case op < 7: // a holder releases
			if _, _, err := store.Release(ctx, ev, user(rng.IntN(pool)), now); err != nil {
				t.Fatal(err)
			}
		case op < 9: // sockets open and close; the gateways let go of presences
			for range 1 + rng.IntN(8) {
				u := user(rng.IntN(pool))
				if g, ok := held[u]; ok {
					g.Leave(ev, u)
					delete(held, u)
				} else {
					held[u] = trackers[rng.IntN(2)]
				}
			}
			for _, g := range trackers {
				if err := g.Flush(ctx, now); err != nil {
					t.Fatal(err)
				}
			}
		default: // a rebuild, from what Redis holds (as if from the log)
			if step%3 == 0 {
				rebuildFromRedis(t, store, c, e, now)
			}
		}
		// Every held user's status, read by their gateway in random
		// slices, then by the store alone: the same.
		for gi, g := range trackers {
			var users []string
			for u, h := range held {
				if h == g {
					users = append(users, u)
				}
			}
			slices.Sort(users)
			rng.Shuffle(len(users), func(i, j int) { users[i], users[j] = users[j], users[i] })
			for len(users) > 0 {
				n := 1 + rng.IntN(len(users))
				slice := users[:n]
				users = users[n:]
				got, err := g.Status(ctx, ev, slice, now)
				if err != nil {
					t.Fatal(err)
				}
				want, err := store.Status(ctx, ev, slice, now)
				if err != nil {
					t.Fatal(err)
				}
				for i, u := range slice {
					if got.Places[i] != want.Places[i] || got.SlotAt[i] != want.SlotAt[i] {
						t.Fatalf("seed %d step %d, gateway %d, %s: tracked %+v slot %d, store %+v slot %d",
							seed, step, gi, u, got.Places[i], got.SlotAt[i], want.Places[i], want.SlotAt[i])
					}
					if got.Places[i].Rank >= 0 {
						compared++
					}
				}
				if got.Total != want.Total || got.AdmittedTotal != want.AdmittedTotal || got.AdmitPerMinute != want.AdmitPerMinute {
					t.Fatalf("seed %d step %d: tracked head %+v, store %+v", seed, step, got, want)
				}
			}
		}
		if drop && step == 60 {
			now = max(now, opensAt) // the drop opens: drawn places are told
		}
	}
	if compared < 200 {
		t.Fatalf("seed %d: only %d positions compared", seed, compared)
	}
}

// rebuildFromRedis writes back what Redis holds of e's line, holds and served marks
// through a rebuild (BeginRebuild, WriteRebuilt, EndRebuild), as the
// rebuild from the log would: a new journal, presences dropped.
func rebuildFromRedis(t *testing.T, store *redisstore.Store, c redis.UniversalClient, e queue.Event, now int64) {
	t.Helper()
	ctx := context.Background()
	if err := store.BeginRebuild(ctx, e.ID, now); err != nil {
		t.Fatal(err)
	}
	read := func(key string) map[string]int64 {
		zs, err := c.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int64{}
		for _, z := range zs {
			m[z.Member.(string)] = int64(z.Score)
		}
		return m
	}
	total, _ := c.HGet(ctx, redisstore.StatsKey(e.ID), "admittedTotal").Int64()
	st := queue.Rebuilt{Event: e, Waiting: read(redisstore.WaitingKey(e.ID)), Holders: read(redisstore.HoldersKey(e.ID)),
		Served: read(redisstore.ServedKey(e.ID)), Prequeue: read(redisstore.PrequeueKey(e.ID)), AdmittedTotal: total}
	if err := store.WriteRebuilt(ctx, st, now); err != nil {
		t.Fatal(err)
	}
	if err := store.EndRebuild(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
}

// A user's presence is held by the gateway holding their socket while it
// reads the line: never swept meanwhile, whatever the cutoff; another
// gateway letting go of it (the user's other tab closed there) makes the
// one still holding a socket take it again, and so does a new socket of the
// user (Fresh); a gateway that stops reading lets go of its users'
// presences once silent past the silent cutoff, as of that cutoff (a
// gateway holding another socket of theirs takes them back), and they go a
// grace later. Users who never connected keep their place.
func TestPresenceHeldByTheReadingGateway(t *testing.T) {
	ctx := context.Background()
	store, c, e := pausedEvent(t)
	ev := e.ID
	now := opensAt
	var joins []queue.Message
	for i, u := range []string{"a", "b", "c", "d"} {
		joins = append(joins, queue.Message{V: 1, Op: queue.OpJoin, EventID: ev, UserID: u, TS: now + int64(i), ID: "x"})
	}
	if _, err := store.Ingest(ctx, joins, now); err != nil {
		t.Fatal(err)
	}
	ga, gb := gateway.NewTracker(store), gateway.NewTracker(store)
	read := func(g *gateway.Tracker, at int64, users ...string) {
		t.Helper()
		if _, err := g.Status(ctx, ev, users, at); err != nil {
			t.Fatal(err)
		}
	}
	// sweep ticks at a time with a presence cutoff and a silent cutoff.
	sweep := func(at, cutoff, silent int64) []string {
		t.Helper()
		r, err := store.Tick(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: at, AdmitBatch: 1,
			PresenceCutoffMs: cutoff, SilentCutoffMs: silent, SweepLimit: 100})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(r[0].Swept)
		return r[0].Swept
	}
	holder := func(u string) string {
		t.Helper()
		at := uint64(c.ZScore(ctx, redisstore.SeenKey(ev), u).Val())
		switch at {
		case 1<<50 + ga.ID():
			return "A"
		case 1<<50 + gb.ID():
			return "B"
		}
		return fmt.Sprint(at)
	}
	read(gb, now, "a", "b")
	read(ga, now+1, "a", "c") // a's other tab, on gateway A: A holds a's presence now
	ga.Leave(ev, "a")
	if err := ga.Flush(ctx, now+2); err != nil {
		t.Fatal(err)
	}
	read(gb, now+3, "a", "b") // B learns from the journal that A let a go, and takes it
	if h := holder("a"); h != "B" {
		t.Fatalf("a's presence is %s's after A let go, want B's", h)
	}
	// Each sweep's cutoff is its time: a presence older by a millisecond
	// is gone. The gateways read right before.
	read(ga, now+10_000, "c")
	read(gb, now+10_000, "a", "b")
	if got := sweep(now+10_000, now+10_000, now+10_000); len(got) != 0 {
		t.Fatalf("swept %v while their gateways read", got)
	}
	ga.Leave(ev, "c")
	if err := ga.Flush(ctx, now+20_000); err != nil {
		t.Fatal(err)
	}
	read(gb, now+20_000, "a", "b")
	if got := sweep(now+20_000, now+20_000, now+20_000); len(got) != 0 {
		t.Fatalf("swept %v at the time of c's let-go", got)
	}
	read(ga, now+20_001, "a") // a's tab on A opens again: A takes a's presence
	if h := holder("a"); h != "A" {
		t.Fatalf("a's presence is %s's after A read a first, want A's", h)
	}
	gb.Fresh(ev, []string{"a"}) // and a newer socket of a on B, which follows a: B takes it
	read(gb, now+20_001, "a", "b")
	if h := holder("a"); h != "B" {
		t.Fatalf("a's presence is %s's after a's new socket on B, want B's", h)
	}
	if got := sweep(now+20_001, now+20_001, now+20_001); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("swept %v past c's let-go, want [c]", got)
	}
	// B stops reading (its last read at now+20_001), without letting go.
	// It is not silent until the silent cutoff passes that read; then its
	// presences are let go as of that cutoff, nobody removed yet: A, still
	// holding a socket of a, takes a's back from the journal; b goes a grace
	// after the let-go; d never connected and stays.
	if got := sweep(now+30_000, now+10_000, now+20_001); len(got) != 0 {
		t.Fatalf("swept %v at B's last read", got)
	}
	if h := holder("b"); h != "B" {
		t.Fatalf("b's presence is %s at B's last read, want B's", h)
	}
	if got := sweep(now+35_002, now+5_002, now+20_002); len(got) != 0 {
		t.Fatalf("swept %v when B went silent: its presences are let go, not removed", got)
	}
	if h := holder("b"); h != fmt.Sprint(now+20_002) {
		t.Fatalf("b's presence is %s once B is silent, want the silent cutoff %d", h, now+20_002)
	}
	read(ga, now+36_000, "a")
	if h := holder("a"); h != "A" {
		t.Fatalf("a's presence is %s after B went silent, want A's (a's socket there lives)", h)
	}
	read(ga, now+80_003, "a")
	if got := sweep(now+80_003, now+20_003, now+65_003); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("swept %v a grace after B went silent, want [b]", got)
	}
	b, err := store.Status(ctx, ev, []string{"d"}, now+90_000)
	if err != nil || b.Places[0].Rank != 1 {
		t.Fatalf("d, who never connected: %+v %v, want second in line, behind a", b, err)
	}
}

// A change the journal never saw (a failover to a replica that lost its
// last writes: here a member written straight into the line) is caught by
// the re-read every followed user gets 10 to 15 minutes after their last.
func TestFollowedUsersAreReadAgain(t *testing.T) {
	ctx := context.Background()
	store, c, e := pausedEvent(t)
	ev := e.ID
	now := opensAt
	if _, err := store.Ingest(ctx, []queue.Message{{V: 1, Op: queue.OpJoin, EventID: ev, UserID: "u", TS: now, ID: "x"}}, now); err != nil {
		t.Fatal(err)
	}
	g := gateway.NewTracker(store)
	rank := func(at int64) int64 {
		t.Helper()
		b, err := g.Status(ctx, ev, []string{"u"}, at)
		if err != nil {
			t.Fatal(err)
		}
		return b.Places[0].Rank
	}
	if r := rank(now); r != 0 {
		t.Fatalf("rank %d, want 0", r)
	}
	if err := c.ZAdd(ctx, redisstore.WaitingKey(ev), redis.Z{Member: "unjournaled", Score: float64(now - 1)}).Err(); err != nil {
		t.Fatal(err)
	}
	if r := rank(now + 15*60*1000); r != 1 {
		t.Fatalf("rank %d 15 minutes later, want 1: read again", r)
	}
}

// counting is a LineStore that counts the users each Line call reads.
type counting struct {
	queue.LineStore
	synced []int
}

func (c *counting) Line(ctx context.Context, ev string, req queue.LineRequest) (queue.LineReply, error) {
	c.synced = append(c.synced, len(req.Sync))
	return c.LineStore.Line(ctx, ev, req)
}

// After a rebuild (a new journal) a gateway reads its users again a few at
// a time, telling the others their last place meanwhile, so a rebuild's
// end does not make every gateway read every user in one round.
func TestTrackerReadsAgainInBoundedBatches(t *testing.T) {
	ctx := context.Background()
	store, c, e := pausedEvent(t)
	ev := e.ID
	now := opensAt
	var users []string
	var joins []queue.Message
	for i := range 10 {
		u := fmt.Sprintf("u%d", i)
		users = append(users, u)
		joins = append(joins, queue.Message{V: 1, Op: queue.OpJoin, EventID: ev, UserID: u, TS: now + int64(i), ID: "x"})
	}
	if _, err := store.Ingest(ctx, joins, now); err != nil {
		t.Fatal(err)
	}
	cs := &counting{LineStore: store}
	g := gateway.NewTracker(cs)
	g.SetRelearn(3)
	read := func() []int64 {
		t.Helper()
		b, err := g.Status(ctx, ev, users, now)
		if err != nil {
			t.Fatal(err)
		}
		var ranks []int64
		for _, p := range b.Places {
			ranks = append(ranks, p.Rank)
		}
		return ranks
	}
	want := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	if got := read(); !slices.Equal(got, want) {
		t.Fatalf("ranks %v, want %v", got, want)
	}
	rebuildFromRedis(t, store, c, e, now)
	cs.synced = nil
	for range 6 {
		if got := read(); !slices.Equal(got, want) {
			t.Fatalf("ranks %v after the rebuild, want %v (the last places meanwhile)", got, want)
		}
	}
	// The first read after the rebuild finds the new journal; then 3 a
	// read, until all are read again.
	if !slices.Equal(cs.synced, []int{0, 3, 3, 3, 1, 0}) {
		t.Fatalf("users read again per call %v, want [0 3 3 3 1 0]", cs.synced)
	}
	if g.Resets() != 1 || g.PlacesRead() != 20 {
		t.Fatalf("%d resets, %d places read; want 1 and 20 (each user at connect and after the rebuild)", g.Resets(), g.PlacesRead())
	}
}

// pausedEvent returns a store on a redis-server of its own, its client and
// a paused event of capacity 1 made in it: a line nobody leaves by
// admission.
func pausedEvent(t *testing.T) (*redisstore.Store, *redis.Client, queue.Event) {
	t.Helper()
	c := testredis.Start(t).Client()
	store, err := redisstore.New(c, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := queue.Event{ID: testenv.EventID(t), Capacity: 1, StaySeconds: 60, State: queue.StatePaused, Partitions: 1}
	if _, err := store.PutEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return store, c, e
}

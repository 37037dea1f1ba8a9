package rebuild_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/rebuild"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/draw"
)

// env is a 3-broker kfake cluster, a redis-server, a store that records
// its changes to the log and one event.
type env struct {
	t     *testing.T
	sys   *testsys.System
	store *recording.Store
	ev    string
	ctx   context.Context
}

func newEnv(t *testing.T, capacity int) *env {
	t.Helper()
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	e := &env{t: t, sys: sys, store: sys.Recorded(redisstore.Options{}, sys.Pub), ev: testenv.EventID(t), ctx: context.Background()}
	if err := sys.Pub.Admin().EnsureTopic(e.ctx, e.ev, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PutEvent(e.ctx, queue.Event{ID: e.ev, Capacity: capacity, StaySeconds: 60, State: queue.StateOpen, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) rebuilder() *rebuild.Rebuilder {
	return &rebuild.Rebuilder{Log: e.sys.Pub.Admin(), Store: e.store, Logger: testenv.Logger(e.t)}
}

// zset returns key's members and scores.
func (e *env) zset(key string) map[string]int64 {
	e.t.Helper()
	zs, err := e.sys.Store.Client().ZRangeWithScores(e.ctx, key, 0, -1).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	out := make(map[string]int64, len(zs))
	for _, z := range zs {
		out[z.Member.(string)] = int64(z.Score)
	}
	return out
}

// line returns the waiting line in order, with scores.
func (e *env) line() []testsys.WaitingUser { return e.sys.Waiting(e.ev) }

func (e *env) admittedTotal() string {
	return e.sys.Store.Client().HGet(e.ctx, redisstore.StatsKey(e.ev), "admittedTotal").Val()
}

// waitLine waits until the line holds want users.
func (e *env) waitLine(want int) {
	e.t.Helper()
	testenv.Eventually(e.t, 20*time.Second, func() (bool, string) {
		n := len(e.line())
		return n == want, fmt.Sprintf("%d waiting, want %d", n, want)
	})
}

func (e *env) tick(now time.Time, cutoff int64) queue.TickResult {
	e.t.Helper()
	res, err := e.store.Tick(e.ctx, queue.TickRequest{EventIDs: []string{e.ev}, NowMs: now.UnixMilli(), AdmitBatch: 100, PresenceCutoffMs: cutoff, SweepLimit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return res[0]
}

func user(i int) string { return fmt.Sprintf("u%03d", i) }

// TestRebuildAfterFlushAll: joins flow, some users are admitted (by the
// consumer's fast track, a release and the monitor), some release, some
// holds end, some users are swept; Redis is emptied mid-stream and joins
// keep coming. The rebuild gives back the line as it was (members, order,
// scores), the holders, the served marks and admittedTotal; the joins
// acknowledged while Redis was empty are in line; replayed joins admit
// nobody twice; a second rebuild gives the same state.
func TestRebuildAfterFlushAll(t *testing.T) {
	e := newEnv(t, 20)
	fast := e.sys.Recorded(redisstore.Options{FastTrack: 100}, e.sys.Pub)
	cons := e.sys.StartConsumerInto(e.sys.ConsumerConfig(), fast)
	base := time.Now().UnixMilli()
	stamp := func(i int) int64 { return base + int64(i) }

	// u000-u199 join; the fast track admits u000-u019.
	for i := range 200 {
		e.sys.Join(e.ev, user(i), stamp(i))
	}
	e.waitLine(180)
	// u000-u004 release: the freed slots go to u020-u024.
	for i := range 5 {
		if ok, _, err := fast.Release(e.ctx, e.ev, user(i), time.Now().UnixMilli()); err != nil || !ok {
			t.Fatalf("release %s: %v %v", user(i), ok, err)
		}
	}
	// u190-u194 are seen now, then gone past the grace; u100-u104 leave.
	if _, err := e.store.Status(e.ctx, e.ev, []string{user(190), user(191), user(192), user(193), user(194)}, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 105; i++ {
		e.sys.Leave(e.ev, user(i), stamp(i)+1000)
	}
	e.waitLine(170)
	// A monitor tick 61 s on: every hold ends, u025-u044 are admitted,
	// u190-u194 are swept.
	r := e.tick(time.Now().Add(61*time.Second), time.Now().UnixMilli()+1)
	if len(r.Admitted) != 20 || len(r.Swept) != 5 || r.Expired != 20 {
		t.Fatalf("tick admitted %d, swept %d, dropped %d: want 20, 5, 20", len(r.Admitted), len(r.Swept), r.Expired)
	}
	e.waitLine(145)

	wantLine, wantHolders, wantServed, wantTotal := e.line(), e.zset(redisstore.HoldersKey(e.ev)), e.zset(redisstore.ServedKey(e.ev)), e.admittedTotal()
	if len(wantHolders) != 20 || len(wantServed) != 45 || wantTotal != "45" {
		t.Fatalf("before: %d holders, %d served, admittedTotal %s: want 20, 45, 45", len(wantHolders), len(wantServed), wantTotal)
	}

	if err := e.sys.Store.Client().FlushAll(e.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// Joins acknowledged while Redis is empty: the consumer dead-letters
	// them (no configuration), the rebuild reads them from the log.
	for i := 300; i < 310; i++ {
		e.sys.Join(e.ev, user(i), stamp(i))
	}
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		s := cons.Stats()
		return s.DeadLettered >= 10, fmt.Sprintf("%d dead-lettered", s.DeadLettered)
	})

	res, err := e.rebuilder().Rebuild(e.ctx, e.ev)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rebuild: %+v", res)
	for i := 300; i < 310; i++ {
		wantLine = append(wantLine, testsys.WaitingUser{User: user(i), TS: stamp(i)})
	}
	if got := e.line(); !slices.Equal(got, wantLine) {
		t.Fatalf("line after the rebuild:\n got %v\nwant %v", got, wantLine)
	}
	if got := e.zset(redisstore.HoldersKey(e.ev)); !maps.Equal(got, wantHolders) {
		t.Fatalf("holders after the rebuild:\n got %v\nwant %v", got, wantHolders)
	}
	if got := e.zset(redisstore.ServedKey(e.ev)); !maps.Equal(got, wantServed) {
		t.Fatalf("served after the rebuild:\n got %v\nwant %v", got, wantServed)
	}
	if got := e.admittedTotal(); got != wantTotal {
		t.Fatalf("admittedTotal %s, want %s", got, wantTotal)
	}
	for _, w := range e.line() {
		if _, ok := wantHolders[w.User]; ok {
			t.Errorf("%s both waits and holds", w.User)
		}
	}

	// The whole log replayed again gives the same state.
	if _, err := e.rebuilder().Rebuild(e.ctx, e.ev); err != nil {
		t.Fatal(err)
	}
	if got := e.line(); !slices.Equal(got, wantLine) {
		t.Fatalf("line after a second rebuild differs:\n got %v\nwant %v", got, wantLine)
	}
	if got := e.zset(redisstore.HoldersKey(e.ev)); !maps.Equal(got, wantHolders) {
		t.Fatalf("holders after a second rebuild differ:\n got %v\nwant %v", got, wantHolders)
	}

	// Joins go on after the rebuild; replayed joins of everyone served
	// (their old stamps) queue nobody again.
	for i := 310; i < 315; i++ {
		e.sys.Join(e.ev, user(i), stamp(i))
	}
	for i := range 45 {
		e.sys.Join(e.ev, user(i), stamp(i))
	}
	e.waitLine(len(wantLine) + 5)
	for _, w := range e.line() {
		if _, ok := wantServed[w.User]; ok {
			t.Errorf("%s, served for the join stamped %d, is in line again", w.User, w.TS)
		}
	}
	// Once the holds end, the monitor admits the next 20 in line order.
	r = e.tick(time.Now().Add(200*time.Second), 0)
	if want := []string{}; len(r.Admitted) != 20 {
		t.Fatalf("after the holds ended the tick admitted %v, want 20 users%v", r.Admitted, want)
	}
	for i, u := range r.Admitted {
		if u != wantLine[i].User {
			t.Fatalf("admitted %v, want the head of the rebuilt line %v", r.Admitted, wantLine[:20])
		}
	}
}

// failing is a recorder whose writes never reach the broker: the admitter
// dies between its Redis change and its records.
type failing struct{}

func (failing) Record(context.Context, []queue.Message) error {
	return errors.New("the admitter died before writing its records")
}

// TestCrashWindowRequeuesAtTheOwnPlace: an admission whose record is never
// written gives no token (status shows no stay, no notice), and after a
// Redis loss and a rebuild its user is back at their own place; nobody is
// over-admitted. Without the loss a later monitor tick writes the record.
func TestCrashWindowRequeuesAtTheOwnPlace(t *testing.T) {
	e := newEnv(t, 1)
	cons := e.sys.StartConsumer(e.sys.ConsumerConfig()) // no fast track: the monitor admits
	defer cons.Stop()
	base := time.Now().UnixMilli()
	for i := range 3 {
		e.sys.Join(e.ev, user(i), base+int64(i))
	}
	e.waitLine(3)
	notices := make(chan queue.AdmissionNotice, 10)
	sctx, stop := context.WithCancel(e.ctx)
	defer stop()
	go func() { _ = e.store.SubscribeAdmissions(sctx, func(a queue.AdmissionNotice) { notices <- a }) }()
	time.Sleep(100 * time.Millisecond) // subscribed

	dying := e.sys.Recorded(redisstore.Options{}, failing{})
	now := time.Now()
	res, err := dying.Tick(e.ctx, queue.TickRequest{EventIDs: []string{e.ev}, NowMs: now.UnixMilli(), AdmitBatch: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res[0].Admitted) != 0 || res[0].Holders != 1 {
		t.Fatalf("dying admitter: told %v, %d holders; want nobody told, 1 holder", res[0].Admitted, res[0].Holders)
	}
	b, err := e.store.Status(e.ctx, e.ev, []string{user(0)}, now.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if p := b.Places[0]; p.StayUntil != -1 || p.Rank != 0 {
		t.Fatalf("an unrecorded holder's status %+v: want no hold, rank 0", p)
	}
	select {
	case a := <-notices:
		t.Fatalf("an unrecorded admission was announced: %+v", a)
	case <-time.After(200 * time.Millisecond):
	}

	t.Run("a later tick writes the record", func(t *testing.T) {
		r := e.tick(now.Add(redisstore.RecordGrace+time.Second), 0)
		if r.Recovered != 1 || len(r.Admitted) != 0 {
			t.Fatalf("tick after the grace: recovered %d, admitted %v; want 1, none", r.Recovered, r.Admitted)
		}
		select {
		case a := <-notices:
			if !slices.Equal(a.Users, []string{user(0)}) {
				t.Fatalf("notice %+v, want u000", a)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the recovered admission was not announced")
		}
		// The log holds it now: a rebuild keeps u000 holding.
		if _, err := e.rebuilder().Rebuild(e.ctx, e.ev); err != nil {
			t.Fatal(err)
		}
		if got := e.zset(redisstore.HoldersKey(e.ev)); len(got) != 1 || got[user(0)] == 0 {
			t.Fatalf("holders after the rebuild %v, want u000", got)
		}
		// Release it so the crash below starts from an empty slot.
		if ok, _, err := e.store.Release(e.ctx, e.ev, user(0), time.Now().UnixMilli()); err != nil || !ok {
			t.Fatalf("release: %v %v", ok, err)
		}
	})

	// u001 is admitted by an admitter that dies; then Redis is lost.
	res, err = dying.Tick(e.ctx, queue.TickRequest{EventIDs: []string{e.ev}, NowMs: time.Now().UnixMilli(), AdmitBatch: 10})
	if err != nil || res[0].Holders != 1 {
		t.Fatalf("dying admitter: %+v %v", res, err)
	}
	if err := e.sys.Store.Client().FlushAll(e.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rebuilder().Rebuild(e.ctx, e.ev); err != nil {
		t.Fatal(err)
	}
	want := []testsys.WaitingUser{{User: user(1), TS: base + 1}, {User: user(2), TS: base + 2}}
	if got := e.line(); !slices.Equal(got, want) {
		t.Fatalf("line after the rebuild %v, want u001 back at its own place: %v", got, want)
	}
	if got := e.zset(redisstore.HoldersKey(e.ev)); len(got) != 0 {
		t.Fatalf("holders after the rebuild %v, want none", got)
	}
	// The capacity holds: one tick admits u001 alone, once.
	r := e.tick(time.Now(), 0)
	if !slices.Equal(r.Admitted, []string{user(1)}) || r.Holders != 1 {
		t.Fatalf("after the rebuild the tick admitted %v (%d holders), want u001 alone", r.Admitted, r.Holders)
	}
	if got := e.admittedTotal(); got != "2" {
		t.Fatalf("admittedTotal %s, want 2 (u000, u001 once each)", got)
	}
}

// TestStatusesSayRebuildingAndAdmissionPauses: Redis loses everything;
// between the mark and the end of the rebuild statuses say rebuilding, no
// tick admits, releases are refused and the consumer holds the event's
// joins; afterwards the held join is in line, the holders hold and
// admission resumes.
func TestStatusesSayRebuildingAndAdmissionPauses(t *testing.T) {
	e := newEnv(t, 2)
	e.sys.StartConsumer(e.sys.ConsumerConfig())
	base := time.Now().UnixMilli()
	e.sys.Join(e.ev, user(0), base)
	e.sys.Join(e.ev, user(1), base+1)
	e.waitLine(2)
	if r := e.tick(time.Now(), 0); len(r.Admitted) != 2 {
		t.Fatalf("admitted %v, want 2", r.Admitted)
	}
	e.sys.Join(e.ev, user(2), base+2)
	e.waitLine(1)

	rb := e.rebuilder()
	if err := e.sys.Store.Client().FlushAll(e.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	began, err := rb.Begin(e.ctx, e.ev)
	if err != nil {
		t.Fatal(err)
	}
	// The configuration is not written yet: a lookup says so, and a
	// cached configuration goes on serving joins.
	if _, err := e.store.Event(e.ctx, e.ev); !errors.Is(err, queue.ErrRebuilding) {
		t.Errorf("event lookup while rebuilding a lost event: %v, want ErrRebuilding", err)
	}
	b, err := e.store.Status(e.ctx, e.ev, []string{user(2), user(9)}, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range b.Places {
		if p.Rank != queue.RankRebuilding {
			t.Errorf("status %d while rebuilding: %+v, want rank %d", i, p, queue.RankRebuilding)
		}
	}
	if _, _, err := e.store.Release(e.ctx, e.ev, user(1), time.Now().UnixMilli()); !errors.Is(err, queue.ErrRebuilding) {
		t.Errorf("release while rebuilding: %v, want ErrRebuilding", err)
	}
	if r := e.tick(time.Now().Add(61*time.Second), 0); len(r.Admitted) != 0 || r.Expired != 0 {
		t.Fatalf("tick while rebuilding admitted %v, dropped %d: want nothing", r.Admitted, r.Expired)
	}
	e.sys.Join(e.ev, user(3), base+3)
	time.Sleep(500 * time.Millisecond)
	if n, err := e.sys.Store.Client().ZScore(e.ctx, redisstore.WaitingKey(e.ev), user(3)).Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("a join was written while rebuilding (score %v, %v)", n, err)
	}

	if _, err := rb.Finish(e.ctx, e.ev, began); err != nil {
		t.Fatal(err)
	}
	e.waitLine(2) // u002 and the held u003
	b, err = e.store.Status(e.ctx, e.ev, []string{user(2), user(0)}, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if b.Places[0].Rank != 0 || b.Places[1].StayUntil <= 0 {
		t.Fatalf("statuses after the rebuild %+v: want u002 first in line, u000 holding", b.Places)
	}
	if r := e.tick(time.Now().Add(61*time.Second), 0); !slices.Equal(r.Admitted, []string{user(2), user(3)}) {
		t.Fatalf("after the rebuild the tick admitted %v, want u002, u003", r.Admitted)
	}
}

// TestRebuildKeepsTheDrawnOrder: a drop's pre-queue joins, spread over
// three partitions, stand at their drawn places; after a Redis loss the
// rebuild gives the same line (drawn scores) and the same pre-queue list.
func TestRebuildKeepsTheDrawnOrder(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	store := sys.Recorded(redisstore.Options{}, sys.Pub)
	ctx := context.Background()
	ev := testenv.EventID(t)
	seed, err := draw.NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	opensAt := time.Now().Add(time.Hour).UnixMilli()
	if err := sys.Pub.Admin().EnsureTopic(ctx, ev, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutEvent(ctx, queue.Event{ID: ev, Capacity: 5, StaySeconds: 60, State: queue.StateOpen, Partitions: 3,
		Schedule: queue.Schedule{OpensAt: opensAt, PrequeueSeconds: 7200}, Seed: &seed}); err != nil {
		t.Fatal(err)
	}
	sys.StartConsumerInto(sys.ConsumerConfig(), sys.Recorded(redisstore.Options{FastTrack: 100}, sys.Pub))
	now := time.Now().UnixMilli()
	for i := range 60 {
		sys.Join(ev, user(i), now+int64(i))
	}
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		n := len(sys.Waiting(ev))
		return n == 60, fmt.Sprintf("%d waiting", n)
	})
	wantLine := sys.Waiting(ev)
	wantDrawn, err := store.DrawOrder(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if wantLine[0].TS >= 0 || len(wantDrawn) != 60 {
		t.Fatalf("before: head %+v, %d drawn: want drawn (negative) scores, 60 drawn", wantLine[0], len(wantDrawn))
	}
	if err := sys.Store.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := (&rebuild.Rebuilder{Log: sys.Pub.Admin(), Store: store}).Rebuild(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if got := sys.Waiting(ev); !slices.Equal(got, wantLine) {
		t.Fatalf("line after the rebuild differs from the drawn one:\n got %v\nwant %v", got[:5], wantLine[:5])
	}
	if got, err := store.DrawOrder(ctx, ev); err != nil || !slices.Equal(got, wantDrawn) {
		t.Fatalf("draw order after the rebuild %v (%v), want %v", got, err, wantDrawn)
	}
	e, err := store.Event(ctx, ev)
	if err != nil || e.Seed == nil || *e.Seed != seed || e.OpensAt != opensAt {
		t.Fatalf("configuration after the rebuild %+v (%v): want the same seed and opening", e, err)
	}
}

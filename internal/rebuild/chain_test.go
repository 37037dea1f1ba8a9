package rebuild_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/rebuild"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/draw"
)

// chainEnv is a chain drop over three partitions whose pre-queue was
// joined by 30 users through the log, on a store that records its
// changes; its clock is the caller's (opensAt is an hour ahead of the
// consumer's).
type chainEnv struct {
	t       *testing.T
	sys     *testsys.System
	store   *recording.Store
	ev      string
	opensAt int64
	ctx     context.Context
}

func startChainEnv(t *testing.T) *chainEnv {
	t.Helper()
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	c := &chainEnv{t: t, sys: sys, store: sys.Recorded(redisstore.Options{}, sys.Pub), ev: testenv.EventID(t),
		opensAt: time.Now().Add(time.Hour).UnixMilli(), ctx: context.Background()}
	seed, err := draw.NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	key := [draw.SaltKeySize]byte{7, 1}
	if err := sys.Pub.Admin().EnsureTopic(c.ctx, c.ev, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := c.store.PutEvent(c.ctx, queue.Event{ID: c.ev, Capacity: 5, StaySeconds: 60, State: queue.StateOpen, Partitions: 3,
		Schedule: queue.Schedule{OpensAt: c.opensAt, PrequeueSeconds: 7200}, Seed: &seed, SaltKey: &key,
		DrawSource: &draw.PublicSource{Name: "drand", Round: 99}}); err != nil {
		t.Fatal(err)
	}
	sys.StartConsumerInto(sys.ConsumerConfig(), c.store)
	for i := range 30 {
		sys.Join(c.ev, user(i), c.opensAt-600_000+int64(i))
	}
	c.waitLine(30)
	return c
}

func (c *chainEnv) waitLine(want int) {
	c.t.Helper()
	testenv.Eventually(c.t, 20*time.Second, func() (bool, string) {
		n := len(c.sys.Waiting(c.ev))
		return n == want, fmt.Sprintf("%d waiting, want %d", n, want)
	})
}

func (c *chainEnv) event() queue.Event {
	c.t.Helper()
	e, err := c.store.Event(c.ctx, c.ev)
	if err != nil {
		c.t.Fatal(err)
	}
	return e
}

// snapshot is what a rebuild must give back of a chain drop.
type snapshot struct {
	chain queue.DrawChainState
	line  []testsys.WaitingUser
	drawn []string
}

func (c *chainEnv) snapshot() snapshot {
	c.t.Helper()
	drawn, err := c.store.DrawOrder(c.ctx, c.ev)
	if err != nil {
		c.t.Fatal(err)
	}
	return snapshot{chain: c.event().Chain, line: c.sys.Waiting(c.ev), drawn: drawn}
}

// loseAndRebuild empties Redis and rebuilds the event from its log.
func (c *chainEnv) loseAndRebuild() error {
	c.t.Helper()
	if err := c.sys.Store.Client().FlushAll(c.ctx).Err(); err != nil {
		c.t.Fatal(err)
	}
	_, err := (&rebuild.Rebuilder{Log: c.sys.Pub.Admin(), Store: c.store, Logger: testenv.Logger(c.t)}).Rebuild(c.ctx, c.ev)
	return err
}

func (c *chainEnv) same(what string, want snapshot) {
	c.t.Helper()
	got := c.snapshot()
	if got.chain != want.chain || !slices.Equal(got.line, want.line) || !slices.Equal(got.drawn, want.drawn) {
		c.t.Fatalf("%s: chain %+v, want %+v\nline %v\nwant %v\ndrawn %v\nwant  %v", what, got.chain, want.chain, got.line, want.line, got.drawn, want.drawn)
	}
}

// TestRebuildKeepsTheChainDraw: a chain drop's entries freeze, then a
// join stamped before the opening reaches the line (it waits at its
// stamp, not an entry). A Redis loss then: the rebuild gives back the
// same root, count and marks, the seed revealed, the same line and
// pre-queue, and the late join still not an entry, nor one that reaches
// the line after the rebuild (the public value then draws the 30). A Redis loss after the draw: the rebuild gives back the
// same public value, drawnAt and drawn line, the same published draw
// (root, count, numbers, order) and the same receipts; after admissions
// too.
func TestRebuildKeepsTheChainDraw(t *testing.T) {
	c := startChainEnv(t)
	frozenAt := c.opensAt + queue.DrawFreezeLagMs
	st, err := c.store.FreezeDraw(c.ctx, c.event(), frozenAt)
	if err != nil || st.EntryCount != 30 || !st.FreezeRecorded || st.Marks == "" {
		t.Fatalf("freeze: %+v %v", st, err)
	}
	c.sys.Join(c.ev, "late", c.opensAt-1)
	c.waitLine(31)
	frozen := c.snapshot()
	if i := slices.IndexFunc(frozen.line, func(w testsys.WaitingUser) bool { return w.User == "late" }); i < 0 || frozen.line[i].TS != c.opensAt-1 || slices.Contains(frozen.drawn, "late") {
		t.Fatalf("the join after the freeze: line %v, drawn %v", frozen.line, frozen.drawn)
	}

	if err := c.loseAndRebuild(); err != nil {
		t.Fatal(err)
	}
	c.same("rebuilt after the freeze", frozen)
	// A join stamped before the opening that reaches the line after the
	// rebuild is no entry either.
	c.sys.Join(c.ev, "later", c.opensAt-2)
	c.waitLine(32)
	if drawn, err := c.store.DrawOrder(c.ctx, c.ev); err != nil || slices.Contains(drawn, "later") || len(drawn) != 30 {
		t.Fatalf("a pre-queue join after the rebuild: drawn %v (%v)", drawn, err)
	}
	if e := c.event(); e.DrawStatus(frozenAt, 30).Seed == "" || e.DrawStatus(frozenAt, 30).EntryRoot != frozen.chain.EntryRoot {
		t.Fatalf("the rebuilt draw's status %+v: the root and seed stay published", *e.DrawStatus(frozenAt, 30))
	}

	if _, err := c.store.SupplyPublicValue(c.ctx, c.event(), []byte{0xbe, 0xef}, frozenAt+1000); err != nil {
		t.Fatal(err)
	}
	made := c.snapshot()
	e := c.event()
	chain, tree, err := c.store.PublicChain(c.ctx, e)
	if err != nil || chain.Verify() != nil || chain.EntryCount != 30 || made.chain.DrawnAt != frozenAt+1000 {
		t.Fatalf("the draw: %+v %v", made.chain, err)
	}
	for _, u := range []string{"late", "later"} {
		if _, ok := chain.Receipt(tree, *e.SaltKey, u); ok {
			t.Fatalf("%s, ingested after the freeze, is among the entries", u)
		}
	}

	if err := c.loseAndRebuild(); err != nil {
		t.Fatal(err)
	}
	c.same("rebuilt after the draw", made)
	again, tree2, err := c.store.PublicChain(c.ctx, c.event())
	if err != nil || !reflect.DeepEqual(again, chain) {
		t.Fatalf("the published draw after the rebuild differs (%v)", err)
	}
	for i := range 30 {
		r1, ok1 := chain.Receipt(tree, *e.SaltKey, user(i))
		r2, ok2 := again.Receipt(tree2, *e.SaltKey, user(i))
		if !ok1 || !ok2 || !reflect.DeepEqual(r1, r2) || draw.VerifyReceipt(again, r2) != nil {
			t.Fatalf("%s's receipt after the rebuild: %+v, was %+v", user(i), r2, r1)
		}
	}
	// Admission resumes in the drawn order: the first five drawn.
	res, err := c.store.Tick(c.ctx, queue.TickRequest{EventIDs: []string{c.ev}, NowMs: frozenAt + 2000, AdmitBatch: 100, SweepLimit: 10})
	if err != nil || !slices.Equal(res[0].Admitted, made.drawn[:5]) {
		t.Fatalf("admitted %v (%v), want the first drawn %v", res[0].Admitted, err, made.drawn[:5])
	}
	// Once some are admitted, a rebuild still gives back the same draw.
	if err := c.loseAndRebuild(); err != nil {
		t.Fatal(err)
	}
	if again, _, err := c.store.PublicChain(c.ctx, c.event()); err != nil || !reflect.DeepEqual(again, chain) {
		t.Fatalf("the published draw after admissions and a rebuild differs (%v)", err)
	}
}

// TestRebuildRefusesAnotherRoot: a drawfrozen record whose root is not
// that of the entries the log holds fails the rebuild, which says so and
// writes nothing.
func TestRebuildRefusesAnotherRoot(t *testing.T) {
	c := startChainEnv(t)
	m := queue.NewRecord(queue.OpDrawFrozen, c.ev, "", c.opensAt+queue.DrawFreezeLagMs)
	m.Draw = &queue.DrawRecord{Root: strings.Repeat("ab", 32), Count: 30, Marks: map[int]int64{0: 1000, 1: 1000, 2: 1000}}
	if err := c.sys.Pub.Record(c.ctx, []queue.Message{m}); err != nil {
		t.Fatal(err)
	}
	err := c.loseAndRebuild()
	if err == nil || !strings.Contains(err.Error(), "drawfrozen record says "+m.Draw.Root) {
		t.Fatalf("a rebuild under another root: %v", err)
	}
	if n := len(c.sys.Waiting(c.ev)); n != 0 {
		t.Fatalf("the refused rebuild wrote %d places", n)
	}
}

// TestChainDrawToldOnlyOnceRecorded: while the log cannot be written, the
// freeze is made but neither its root nor the seed is told, and the
// public value is answered broker_unavailable, the draw made but not
// published and nobody admitted (another value is refused); once the log
// takes writes, the same value again records the freeze and the draw.
func TestChainDrawToldOnlyOnceRecorded(t *testing.T) {
	c := startChainEnv(t)
	down := recording.New(c.sys.StoreWith(redisstore.Options{}), failing{}, testenv.Logger(t))
	frozenAt := c.opensAt + queue.DrawFreezeLagMs
	st, err := down.EventStatus(c.ctx, c.ev, frozenAt)
	if err != nil || !st.Event.Chain.Frozen() || st.Event.Chain.FreezeRecorded {
		t.Fatalf("a read while the log is down: %+v %v", st.Event.Chain, err)
	}
	if d := st.Event.DrawStatus(frozenAt, 30); d.Seed != "" || d.EntryRoot != "" {
		t.Fatalf("told before recorded: %+v", *d)
	}
	if _, err := down.SupplyPublicValue(c.ctx, st.Event, []byte{1}, frozenAt+1); err != queue.ErrBrokerUnavailable {
		t.Fatalf("the value while the log is down: %v", err)
	}
	if res, err := down.Tick(c.ctx, queue.TickRequest{EventIDs: []string{c.ev}, NowMs: frozenAt + 2, AdmitBatch: 100}); err != nil || len(res[0].Admitted) != 0 {
		t.Fatalf("admitted %v (%v) before the draw was recorded", res[0].Admitted, err)
	}
	if _, _, err := c.store.PublicChain(c.ctx, c.event()); queue.ErrorCode(err) != queue.CodeDrawNotRevealed {
		t.Fatalf("the draw published before recorded: %v", err)
	}
	if _, err := c.store.SupplyPublicValue(c.ctx, c.event(), []byte{2}, frozenAt+3); queue.ErrorCode(err) != queue.CodePublicValueSet {
		t.Fatalf("another value after one made: %v", err)
	}
	if st, err := c.store.SupplyPublicValue(c.ctx, c.event(), []byte{1}, frozenAt+4); err != nil || st.DrawnAt != frozenAt+1 || !st.FreezeRecorded {
		t.Fatalf("the same value again once the log is up: %+v %v", st, err)
	}
	up, err := c.store.EventStatus(c.ctx, c.ev, frozenAt+5)
	if d := up.Event.DrawStatus(frozenAt+5, 30); err != nil || d.Seed == "" || d.DrawnAt != frozenAt+1 || d.PublicValue != "01" {
		t.Fatalf("a read once recorded: %+v %v", up.Event.Chain, err)
	}
	if err := c.loseAndRebuild(); err != nil {
		t.Fatal(err)
	}
	if e := c.event(); e.Chain.DrawnAt != frozenAt+1 || e.Chain.PublicValue != "01" {
		t.Fatalf("rebuilt: %+v", e.Chain)
	}
}

package kafkajoin_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testdraw"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestDropLineIsTheDrawThenStampOrder: 500 pre-queue joins, stamped in a
// known order and published in another over four partitions, are written
// through the consumer group while the opening is still in the future:
// nobody is admitted though the fast track is on and there is room. After
// the opening the line is exactly the order recomputed (in the test) from
// the seed, then the joins stamped after the opening in stamp order; a
// pre-queue join delivered after the opening lands at its drawn place.
func TestDropLineIsTheDrawThenStampOrder(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	opensAt := time.Now().Add(4 * time.Second).UnixMilli()
	e := sys.CreateDrop(ev, 2, 4, opensAt, 600)
	sys.StartConsumerInto(sys.ConsumerConfig(), sys.StoreWith(redisstore.Options{FastTrack: 100}))

	const n = 500
	pre := make([]testsys.WaitingUser, n)
	ids := make([]string, n)
	for i := range pre {
		ids[i] = fmt.Sprintf("fan%03d", i)
		pre[i] = testsys.WaitingUser{User: ids[i], TS: opensAt - 300_000 + int64(i)}
	}
	drawn := testdraw.Order(t, e.Seed.Hex(), ids)
	// The late one is drawn well behind the two admitted at the opening,
	// so nobody overtakes it.
	late := drawn[n/2]
	early := slices.DeleteFunc(slices.Clone(pre), func(u testsys.WaitingUser) bool { return u.User == late })
	rand.Shuffle(len(early), func(i, j int) { early[i], early[j] = early[j], early[i] })
	publishAll(t, sys, ev, early)
	waitLine(t, sys, ev, n-1)
	ctx := context.Background()
	if time.Now().UnixMilli() >= opensAt {
		t.Fatal("the pre-queue took longer than the 4 s before the opening; the test proves nothing")
	}
	if active, _ := sys.Store.Client().ZCard(ctx, redisstore.HoldersKey(ev)).Result(); active != 0 {
		t.Fatalf("%d users admitted before the opening", active)
	}

	time.Sleep(time.Until(time.UnixMilli(opensAt)))
	post := []testsys.WaitingUser{{User: "post-c", TS: opensAt + 30}, {User: "post-a", TS: opensAt + 10}, {User: "post-b", TS: opensAt + 20}}
	publishAll(t, sys, ev, post)
	sys.Join(ev, late, opensAt-1)
	// The fast track admits the first two drawn at the first write after
	// the opening; everyone else waits.
	line := waitLine(t, sys, ev, n+3-2)
	want := append(slices.Clone(drawn[2:]), "post-a", "post-b", "post-c")
	got := make([]string, len(line))
	for i, u := range line {
		got[i] = u.User
	}
	if !slices.Equal(got, want) {
		t.Fatalf("line after the opening is not the drawn order then stamp order\n got %v\nwant %v", got[:8], want[:8])
	}
	holders, _ := sys.Store.Client().ZRange(ctx, redisstore.HoldersKey(ev), 0, -1).Result()
	slices.Sort(holders)
	first := slices.Sorted(slices.Values(drawn[:2]))
	if !slices.Equal(holders, first) {
		t.Fatalf("holders %v, want the first two drawn %v", holders, first)
	}
	st, err := sys.Store.EventStatus(ctx, ev, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if st.Fairness.Inversions != 0 || st.Draw.PrequeueSize != n {
		t.Fatalf("fairness %+v, draw %+v: want no inversion and %d in the pre-queue", st.Fairness, st.Draw, n)
	}
}

package app_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestRebuildKeepsAMove: after alice's place moved to carol by a resume
// link (recorded: moved on alice's key, movedin on carol's, partitions
// apart), a rebuild from the log alone gives carol alice's place and tells
// alice it moved.
func TestRebuildKeepsAMove(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	store := sys.Recorded(redisstore.Options{}, sys.Pub)
	ctx := context.Background()
	ev := testenv.EventID(t)
	if err := sys.Pub.Admin().EnsureTopic(ctx, ev, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutEvent(ctx, queue.Event{ID: ev, Capacity: 5, StaySeconds: 30, State: queue.StatePaused, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	for _, j := range []struct {
		user string
		ts   int64
	}{{"bob", 50}, {"alice", 100}, {"dave", 150}} {
		sys.Join(ev, j.user, j.ts)
		m := queue.NewMessage(queue.OpJoin, ev, j.user, j.ts)
		if _, err := store.Ingest(ctx, []queue.Message{m}, j.ts); err != nil {
			t.Fatal(err)
		}
	}
	r := queue.NewResume(ev, "alice", 100, time.UnixMilli(1000), time.Hour)
	if _, err := store.Move(ctx, queue.Move{Resume: r, To: "carol", NowMs: 1000}); err != nil {
		t.Fatal(err)
	}
	want := []testsys.WaitingUser{{User: "bob", TS: 50}, {User: "carol", TS: 100}, {User: "dave", TS: 150}}
	if got := sys.Waiting(ev); !slices.Equal(got, want) {
		t.Fatalf("line after the move %v, want %v", got, want)
	}
	if err := sys.Store.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var out testenv.Buffer
	args := []string{"-kafka-brokers", strings.Join(sys.BrokerConfig.Brokers, ","), "-redis-url", sys.Redis.URL(), "-events", ev}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := app.Run(cctx, &app.Rebuild{}, args, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("waitq-rebuild: %v\n%s", err, out.String())
	}
	if got := sys.Waiting(ev); !slices.Equal(got, want) {
		t.Errorf("line after the rebuild %v, want %v", got, want)
	}
	b, err := sys.Store.Status(ctx, ev, []string{"alice", "carol"}, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if b.Places[0].Turn != queue.TurnMoved || b.Places[1].Rank != 1 {
		t.Errorf("after the rebuild alice %+v (want moved), carol %+v (want rank 1)", b.Places[0], b.Places[1])
	}
	// The old join of alice, redelivered, queues nobody: the rebuilt served
	// mark covers it.
	if res, err := sys.Store.Ingest(ctx, []queue.Message{queue.NewMessage(queue.OpJoin, ev, "alice", 100)}, 3000); err != nil || res.Joined != 0 {
		t.Errorf("alice's old join after the rebuild: %+v, %v; want no place", res, err)
	}
}

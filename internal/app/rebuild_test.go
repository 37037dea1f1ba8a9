package app_test

import (
	"context"
	"errors"
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

// TestRebuildCommandRestoresEveryEvent: after FLUSHALL, waitq-rebuild -all
// gives each event back its configuration, registration and line.
func TestRebuildCommandRestoresEveryEvent(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	store := sys.Recorded(redisstore.Options{}, sys.Pub)
	ctx := context.Background()
	events := []string{testenv.EventID(t), testenv.EventID(t)}
	for _, ev := range events {
		if err := sys.Pub.Admin().EnsureTopic(ctx, ev, 2); err != nil {
			t.Fatal(err)
		}
		if _, err := store.PutEvent(ctx, queue.Event{ID: ev, Capacity: 5, StaySeconds: 30, State: queue.StatePaused, Partitions: 2}); err != nil {
			t.Fatal(err)
		}
		sys.Join(ev, "alice", 100)
		sys.Join(ev, "bob", 50)
	}
	if err := sys.Store.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var out testenv.Buffer
	args := []string{"-kafka-brokers", strings.Join(sys.BrokerConfig.Brokers, ","), "-redis-url", sys.Redis.URL(), "-all"}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := app.Run(cctx, &app.Rebuild{}, args, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("waitq-rebuild: %v\n%s", err, out.String())
	}
	ids, err := sys.Store.EventIDs(ctx)
	if err != nil || !slices.Equal(ids, slices.Sorted(slices.Values(events))) {
		t.Fatalf("registered events %v (%v), want %v", ids, err, events)
	}
	for _, ev := range events {
		e, err := sys.Store.Event(ctx, ev)
		if err != nil || e.Capacity != 5 || e.StaySeconds != 30 || e.State != queue.StatePaused {
			t.Errorf("configuration of %s after the rebuild: %+v, %v", ev, e, err)
		}
		if got, want := sys.Waiting(ev), []testsys.WaitingUser{{User: "bob", TS: 50}, {User: "alice", TS: 100}}; !slices.Equal(got, want) {
			t.Errorf("line of %s after the rebuild %v, want %v", ev, got, want)
		}
	}
}

// TestRebuildAllSkipsADeletedEventsTopic: -all leaves out an event deleted
// whose topic remains (its tombstone stands) instead of bringing it back,
// and rebuilds the others; naming it fails.
func TestRebuildAllSkipsADeletedEventsTopic(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	store := sys.Recorded(redisstore.Options{}, sys.Pub)
	ctx := context.Background()
	live, deleted := testenv.EventID(t), testenv.EventID(t)
	for _, ev := range []string{live, deleted} {
		if err := sys.Pub.Admin().EnsureTopic(ctx, ev, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := store.PutEvent(ctx, queue.Event{ID: ev, Capacity: 5, StaySeconds: 30, State: queue.StatePaused, Partitions: 1}); err != nil {
			t.Fatal(err)
		}
		sys.Join(ev, "alice", 100)
	}
	// Deleted while its topic's deletion failed: the tombstone stands.
	if err := store.DeleteEvent(ctx, deleted, 200); err != nil {
		t.Fatal(err)
	}
	base := []string{"-kafka-brokers", strings.Join(sys.BrokerConfig.Brokers, ","), "-redis-url", sys.Redis.URL()}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out testenv.Buffer
	if err := app.Run(cctx, &app.Rebuild{}, append(base, "-all"), func(string) string { return "" }, &out); err != nil {
		t.Fatalf("waitq-rebuild -all: %v\n%s", err, out.String())
	}
	if ids, err := sys.Store.EventIDs(ctx); err != nil || !slices.Equal(ids, []string{live}) {
		t.Errorf("registered events %v (%v), want only %s", ids, err, live)
	}
	if _, err := sys.Store.Event(ctx, deleted); !errors.Is(err, queue.ErrEventNotFound) {
		t.Errorf("the deleted event after -all: %v, want not found", err)
	}
	if err := app.Run(cctx, &app.Rebuild{}, append(base, "-events", deleted), func(string) string { return "" }, &out); !errors.Is(err, queue.ErrLogNotDeleted) {
		t.Errorf("waitq-rebuild -events %s: %v, want ErrLogNotDeleted", deleted, err)
	}
}

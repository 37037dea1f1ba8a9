package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/rebuild"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestFramesSayRebuilding: while the event is rebuilt from its log, its
// sockets and polls say rebuilding; afterwards the user is told their
// place again, the same as before.
func TestFramesSayRebuilding(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	store := sys.Recorded(redisstore.Options{}, sys.Pub)
	e := startGatewayOn(t, sys, store, fast, nil, gateway.DefaultWriteBuffer)
	ev := testenv.EventID(t)
	ctx := context.Background()
	if err := sys.Pub.Admin().EnsureTopic(ctx, ev, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutEvent(ctx, queue.Event{ID: ev, Capacity: 1, StaySeconds: 60, State: queue.StatePaused, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	sys.StartConsumer(sys.ConsumerConfig())
	sys.Join(ev, "first", 100)
	sys.Join(ev, "second", 200)
	c := e.connect(t, ev, "second")
	c.Status(waiting(2, 2), 10*time.Second)

	rb := &rebuild.Rebuilder{Log: sys.Pub.Admin(), Store: store, Logger: testenv.Logger(t)}
	began, err := rb.Begin(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	c.Status(inState(gateway.StateRebuilding), 5*time.Second)
	resp, err := http.Get(e.srv.URL + "/v1/events/" + ev + "/status?ticket=" + e.ticket(ev, "first"))
	if err != nil {
		t.Fatal(err)
	}
	var f gateway.StatusFrame
	err = json.NewDecoder(resp.Body).Decode(&f)
	resp.Body.Close()
	if err != nil || f.State != gateway.StateRebuilding || f.Position != 0 {
		t.Fatalf("poll while rebuilding: %+v (%v), want state rebuilding, position 0", f, err)
	}
	if _, err := rb.Finish(ctx, ev, began); err != nil {
		t.Fatal(err)
	}
	c.Status(waiting(2, 2), 5*time.Second)
}

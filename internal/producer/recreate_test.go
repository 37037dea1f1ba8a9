package producer_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/rebuild"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/contract"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// topicsThatKeep are the broker's topics, whose deletion fails.
type topicsThatKeep struct{ queue.Topics }

func (topicsThatKeep) DeleteTopic(context.Context, string) error {
	return errors.New("injected: topic deletion failed")
}

// TestRecreatedEventRebuildsWithoutTheDeletedOnesUsers: an event deleted
// while its topic's deletion failed (the DELETE still answers 204), then
// created again under the same id, must rebuild from its log with its own
// users only, not the deleted event's.
//
// Suspect 6, confirmed: the re-created event reuses the leftover topic and
// a rebuild folds the old event's joins into the new line. It needs a
// change in the admin DELETE (internal/producer/admin.go) or in the
// rebuild's fold (internal/rebuild), both in other hands: skipped until
// then unless WAITQ_TEST_SUSPECT6=1.
func TestRecreatedEventRebuildsWithoutTheDeletedOnesUsers(t *testing.T) {
	if os.Getenv("WAITQ_TEST_SUSPECT6") != "1" {
		t.Skip("suspect 6 (confirmed): a re-created event's rebuild folds the deleted event's users; set WAITQ_TEST_SUSPECT6=1 to run")
	}
	sys := testsys.Start(t, testsys.Options{})
	store := sys.StoreWith(redisstore.Options{Recorder: sys.Pub, Logger: testenv.Logger(t)})
	tickets, _ := queue.NewTicketSigner("test-secret")
	s, err := producer.New(producer.Config{AdminToken: adminToken}, producer.Deps{
		Store: store, Topics: topicsThatKeep{sys.Pub.Admin()}, Publisher: sys.Pub, Tickets: tickets,
		Logger: testenv.Logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(contract.Producer(t).Handler(t, s))
	t.Cleanup(srv.Close)
	e := &apiEnv{sys: sys, srv: srv, tickets: tickets}
	ev := testenv.EventID(t)

	if r := e.putEvent(t, ev, `{"capacity":5,"partitions":1}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", user("old-user"), nil); r.status != http.StatusAccepted {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodDelete, "/v1/admin/events/"+ev, admin(), nil); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := e.putEvent(t, ev, `{"capacity":5,"partitions":1}`); r.status != http.StatusCreated {
		t.Fatalf("create again: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", user("new-user"), nil); r.status != http.StatusAccepted {
		t.Fatalf("join the new event: %d %s", r.status, r.body)
	}
	rb := &rebuild.Rebuilder{Log: sys.Pub.Admin(), Store: store, Logger: testenv.Logger(t)}
	res, err := rb.Rebuild(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if res.Waiting != 1 {
		t.Errorf("the re-created event rebuilt with %d waiting, want 1 (new-user): the deleted event's users were folded in", res.Waiting)
	}
}

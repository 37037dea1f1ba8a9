package producer_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/rebuild"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/contract"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// topicsThatKeep are the broker's topics, whose deletion fails while keep
// is set.
type topicsThatKeep struct {
	queue.Topics
	keep atomic.Bool
}

func (t *topicsThatKeep) DeleteTopic(ctx context.Context, id string) error {
	if t.keep.Load() {
		return errors.New("injected: topic deletion failed")
	}
	return t.Topics.DeleteTopic(ctx, id)
}

// recreateEnv is an API whose topic deletions fail at will, over a store
// that records, and a rebuilder of the same store.
type recreateEnv struct {
	*apiEnv
	topics *topicsThatKeep
	store  *recording.Store
	rb     *rebuild.Rebuilder
}

func startRecreate(t *testing.T) *recreateEnv {
	t.Helper()
	sys := testsys.Start(t, testsys.Options{})
	store := sys.Recorded(redisstore.Options{}, sys.Pub)
	tickets, _ := queue.NewTicketSigner("test-secret")
	topics := &topicsThatKeep{Topics: sys.Pub.Admin()}
	s, err := producer.New(producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken}, producer.Deps{
		Store: store, Topics: topics, Publisher: sys.Pub, Tickets: tickets,
		Logger: testenv.Logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(contract.Producer(t).Handler(t, s))
	t.Cleanup(srv.Close)
	return &recreateEnv{
		apiEnv: &apiEnv{sys: sys, srv: srv, tickets: tickets},
		topics: topics, store: store,
		rb: &rebuild.Rebuilder{Log: sys.Pub.Admin(), Store: store, Logger: testenv.Logger(t)},
	}
}

// create creates ev (one partition) and joins users to it.
func (e *recreateEnv) create(t *testing.T, ev string, users ...string) {
	t.Helper()
	if r := e.putEvent(t, ev, `{"capacity":5,"partitions":1}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	e.join(t, ev, users...)
}

func (e *recreateEnv) join(t *testing.T, ev string, users ...string) {
	t.Helper()
	for _, u := range users {
		if r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", user(u), nil); r.status != http.StatusAccepted {
			t.Fatalf("join %s: %d %s", u, r.status, r.body)
		}
	}
}

func (e *recreateEnv) deleteEvent(t *testing.T, ev string) reply {
	t.Helper()
	return e.do(t, http.MethodDelete, "/v1/admin/events/"+ev, admin(), nil)
}

// hasTopic reports whether ev's topic exists.
func (e *recreateEnv) hasTopic(t *testing.T, ev string) bool {
	t.Helper()
	topics, err := e.sys.Pub.Admin().JoinTopics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(topics, e.sys.BrokerConfig.Topic(ev))
}

// joined lists the users whose joins ev's log holds.
func (e *recreateEnv) joined(t *testing.T, ev string) []string {
	t.Helper()
	var (
		mu    sync.Mutex
		users []string
	)
	if _, err := e.sys.Pub.Admin().ReadLog(t.Context(), ev, func(_ int, _ int64, m queue.Message) {
		if m.Op == queue.OpJoin {
			mu.Lock()
			users = append(users, m.UserID)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(users)
	return users
}

func (e *recreateEnv) tombstoned(t *testing.T, ev string) bool {
	t.Helper()
	dead, err := e.store.Tombstoned(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return dead
}

// TestRecreatedEventRebuildsWithoutTheDeletedOnesUsers: an event deleted
// while its topic's deletion fails, then created again under the same id
// (the PUT repeated until the broker deletes), must rebuild from its log
// with its own users only, not the deleted event's (suspect 6: the
// re-created event reused the leftover topic and a rebuild folded the old
// event's joins into the new line).
func TestRecreatedEventRebuildsWithoutTheDeletedOnesUsers(t *testing.T) {
	e := startRecreate(t)
	ev := testenv.EventID(t)
	e.create(t, ev, "old-user")

	e.topics.keep.Store(true)
	if r := e.deleteEvent(t, ev); r.status != http.StatusNoContent && r.status != http.StatusServiceUnavailable {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	first := e.putEvent(t, ev, `{"capacity":5,"partitions":1}`)
	if first.status != http.StatusCreated && first.status != http.StatusServiceUnavailable {
		t.Fatalf("create again while the topic cannot be deleted: %d %s", first.status, first.body)
	}
	e.topics.keep.Store(false)
	if first.status != http.StatusCreated {
		if r := e.putEvent(t, ev, `{"capacity":5,"partitions":1}`); r.status != http.StatusCreated {
			t.Fatalf("create again once the topic can be deleted: %d %s", r.status, r.body)
		}
	}
	e.join(t, ev, "new-user")

	res, err := e.rb.Rebuild(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if res.Waiting != 1 {
		t.Errorf("the re-created event rebuilt with %d waiting, want 1 (new-user): the deleted event's users were folded in", res.Waiting)
	}
	if got := e.joined(t, ev); !slices.Equal(got, []string{"new-user"}) {
		t.Errorf("the re-created event's log holds the joins of %v, want [new-user]", got)
	}
}

// TestDeleteAnswers503UntilTheTopicIsDeleted: a DELETE whose topic
// deletion fails removes the event but answers 503 broker_unavailable and
// leaves its tombstone and its log; a DELETE again retries (503 while the
// broker still fails, not 404) and answers 204 once the topic is gone,
// the tombstone with it; a third answers 404.
func TestDeleteAnswers503UntilTheTopicIsDeleted(t *testing.T) {
	e := startRecreate(t)
	ev := testenv.EventID(t)
	e.create(t, ev, "old-user")

	e.topics.keep.Store(true)
	for i := range 2 {
		r := e.deleteEvent(t, ev)
		if r.status != http.StatusServiceUnavailable || r.errorCode(t) != queue.CodeBrokerUnavailable {
			t.Fatalf("delete %d while the topic cannot be deleted: %d %s, want 503 broker_unavailable", i+1, r.status, r.body)
		}
		if r.header.Get("Retry-After") == "" {
			t.Errorf("delete %d: 503 without Retry-After", i+1)
		}
	}
	if r := e.do(t, http.MethodGet, "/v1/admin/events/"+ev, admin(), nil); r.status != http.StatusNotFound {
		t.Errorf("GET of the deleted event: %d %s, want 404", r.status, r.body)
	}
	if !e.tombstoned(t, ev) || !e.hasTopic(t, ev) {
		t.Fatalf("after the 503: tombstone %v, topic %v; want both", e.tombstoned(t, ev), e.hasTopic(t, ev))
	}

	e.topics.keep.Store(false)
	if r := e.deleteEvent(t, ev); r.status != http.StatusNoContent {
		t.Fatalf("delete again once the topic can be deleted: %d %s, want 204", r.status, r.body)
	}
	if e.tombstoned(t, ev) || e.hasTopic(t, ev) {
		t.Errorf("after the 204: tombstone %v, topic %v; want neither", e.tombstoned(t, ev), e.hasTopic(t, ev))
	}
	if r := e.deleteEvent(t, ev); r.status != http.StatusNotFound || r.errorCode(t) != queue.CodeEventNotFound {
		t.Errorf("delete of an event gone with its log: %d %s, want 404 event_not_found", r.status, r.body)
	}
}

// TestCreateOverATombstoneIsRefusedWhileTheTopicRemains: a PUT creating an
// id deleted whose topic remains retries the topic's deletion and, while
// it fails, creates nothing (503 broker_unavailable); the old log stays
// intact meanwhile and no rebuild brings the deleted event back. Once the
// topic can be deleted the PUT creates the event on a fresh log.
func TestCreateOverATombstoneIsRefusedWhileTheTopicRemains(t *testing.T) {
	e := startRecreate(t)
	ev := testenv.EventID(t)
	e.create(t, ev, "old-user")

	e.topics.keep.Store(true)
	if r := e.deleteEvent(t, ev); r.status != http.StatusServiceUnavailable {
		t.Fatalf("delete: %d %s, want 503", r.status, r.body)
	}
	r := e.putEvent(t, ev, `{"capacity":5,"partitions":1}`)
	if r.status != http.StatusServiceUnavailable || r.errorCode(t) != queue.CodeBrokerUnavailable {
		t.Fatalf("create over the tombstone: %d %s, want 503 broker_unavailable", r.status, r.body)
	}
	if _, err := e.store.Event(t.Context(), ev); !errors.Is(err, queue.ErrEventNotFound) {
		t.Errorf("the refused PUT stored a configuration (err %v)", err)
	}
	if _, err := e.store.PutEvent(t.Context(), queue.Event{ID: ev, Capacity: 5, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}); !errors.Is(err, queue.ErrLogNotDeleted) {
		t.Errorf("Store.PutEvent over the tombstone: %v, want ErrLogNotDeleted", err)
	}
	if got := e.joined(t, ev); !slices.Equal(got, []string{"old-user"}) {
		t.Errorf("the deleted event's log holds %v, want [old-user] intact", got)
	}
	if _, err := e.rb.Rebuild(t.Context(), ev); !errors.Is(err, queue.ErrLogNotDeleted) {
		t.Errorf("rebuild of the deleted event: %v, want ErrLogNotDeleted", err)
	}
	if _, err := e.store.Event(t.Context(), ev); !errors.Is(err, queue.ErrEventNotFound) {
		t.Errorf("the refused rebuild left a configuration (err %v)", err)
	}

	e.topics.keep.Store(false)
	if r := e.putEvent(t, ev, `{"capacity":5,"partitions":1}`); r.status != http.StatusCreated {
		t.Fatalf("create once the topic can be deleted: %d %s, want 201", r.status, r.body)
	}
	if e.tombstoned(t, ev) {
		t.Error("the tombstone stayed after the create")
	}
	if got := e.joined(t, ev); len(got) != 0 {
		t.Errorf("the new event's log holds the joins of %v, want none", got)
	}
}

// TestRedisLostNeverDeletesTheLog: after a loss of Redis (no tombstone,
// the topic intact), neither a DELETE (404) nor a PUT creating the event
// again deletes its log: a rebuild finds every join.
func TestRedisLostNeverDeletesTheLog(t *testing.T) {
	e := startRecreate(t)
	ev := testenv.EventID(t)
	e.create(t, ev, "a", "b")
	if err := e.sys.Store.Client().FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if r := e.deleteEvent(t, ev); r.status != http.StatusNotFound {
		t.Fatalf("delete of an event Redis lost: %d %s, want 404", r.status, r.body)
	}
	if r := e.putEvent(t, ev, `{"capacity":5,"partitions":1}`); r.status != http.StatusCreated {
		t.Fatalf("create again: %d %s", r.status, r.body)
	}
	res, err := e.rb.Rebuild(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if res.Waiting != 2 {
		t.Errorf("rebuilt with %d waiting, want 2 (a, b): the log was lost", res.Waiting)
	}
}

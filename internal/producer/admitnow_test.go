package producer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/contract"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestAdminChangeThatMakesRoomAdmitsAtOnce: resuming a paused event, raising
// its capacity or raising its rate admits the users waiting at once, on
// producer-api, with the admissions recorded before anyone is told, as the
// monitor's tick does. No slot monitor runs here (as if WAITQ_ADMIT_INTERVAL
// were a minute or more): the next tick never comes, so only the admin
// change can have admitted them. (Issue 7.)
func TestAdminChangeThatMakesRoomAdmitsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name, create, change string
		// before is how many hold a slot after a monitor tick, before the
		// change.
		before int64
	}{
		{"resume", `{"capacity":5,"state":"paused","partitions":1}`, `{"state":"open"}`, 0},
		{"capacity raised", `{"capacity":1,"partitions":1}`, `{"capacity":3}`, 1},
		{"rate raised", `{"capacity":5,"admitPerMinute":1,"partitions":1}`, `{"admitPerMinute":600000}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := testsys.Start(t, testsys.Options{})
			// producer-api's store: with the recorder, as internal/app builds it.
			store := sys.Recorded(redisstore.Options{}, sys.Pub)
			e := startAPIOn(t, sys, store)
			sys.StartConsumer(sys.ConsumerConfig()) // no fast track: joins only queue
			ev := testenv.EventID(t)
			if r := e.putEvent(t, ev, tc.create); r.status != http.StatusCreated {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			users := []string{"u1", "u2", "u3"}
			for i, u := range users {
				sys.Join(ev, u, time.Now().UnixMilli()+int64(i))
			}
			testenv.Eventually(t, 10*time.Second, func() (bool, string) {
				w := sys.Waiting(ev)
				return len(w) == len(users), fmt.Sprintf("waiting %v", w)
			})
			// One monitor tick: what the line's limits let in before the change.
			if _, err := store.Tick(context.Background(), queue.TickRequest{EventIDs: []string{ev}, NowMs: time.Now().UnixMilli(), AdmitBatch: queue.DefaultAdmitBatch}); err != nil {
				t.Fatal(err)
			}
			if got := holders(t, sys, ev); got != tc.before {
				t.Fatalf("before the change %d hold a slot, want %d", got, tc.before)
			}

			if r := e.putEvent(t, ev, tc.change); r.status != http.StatusOK {
				t.Fatalf("change: %d %s", r.status, r.body)
			}
			// Well under any monitor interval (and no monitor runs).
			testenv.Eventually(t, 2*time.Second, func() (bool, string) {
				n := holders(t, sys, ev)
				return n == int64(len(users)), fmt.Sprintf("%d of %d hold a slot after the change", n, len(users))
			})
			// Recorded, then told: none is left in the unrecorded set, and
			// the log holds an admit record for each.
			unrecorded, err := sys.Store.Client().ZCard(context.Background(), redisstore.UnrecordedKey(ev)).Result()
			if err != nil || unrecorded != 0 {
				t.Errorf("%d admissions unrecorded (%v)", unrecorded, err)
			}
			// Two configurations, the joins, and the admissions.
			admits := 0
			for _, m := range sys.ReadTopic(ev, 2+2*len(users)) {
				if m.Op == queue.OpAdmit {
					admits++
				}
			}
			if admits != len(users) {
				t.Errorf("%d admit records in the log, want %d", admits, len(users))
			}
		})
	}
}

// startAPIOn is startAPI over store in place of the System's.
func startAPIOn(t *testing.T, sys *testsys.System, store *recording.Store) *apiEnv {
	t.Helper()
	tickets, err := queue.NewTicketSigner("test-secret")
	if err != nil {
		t.Fatal(err)
	}
	s, err := producer.New(producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken}, producer.Deps{
		Store: store, Topics: sys.Pub.Admin(), Publisher: sys.Pub, Tickets: tickets, Logger: testenv.Logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(contract.Producer(t).Handler(t, s))
	t.Cleanup(srv.Close)
	return &apiEnv{sys: sys, srv: srv, tickets: tickets}
}

func holders(t *testing.T, sys *testsys.System, ev string) int64 {
	t.Helper()
	n, err := sys.Store.Client().ZCard(context.Background(), redisstore.HoldersKey(ev)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

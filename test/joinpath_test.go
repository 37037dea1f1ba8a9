package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/testenv"
	"github.com/waitq/waitq/internal/testredis"
	"github.com/waitq/waitq/internal/testsys"
)

const (
	adminToken   = "e2e-admin-token"
	ticketSecret = "e2e-ticket-secret-0123456789"
)

// TestConsumerKilledTwiceLosesNoAcknowledgedJoin sends a stream of joins
// through the real producer-api while the real ingest-consumer is SIGKILLed
// twice and restarted: every join answered 202 must reach the line with its
// stamp as score, exactly once.
func TestConsumerKilledTwiceLosesNoAcknowledgedJoin(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Redis: []testredis.Option{testredis.Persistent()}})
	brokers := strings.Join(sys.Kafka.ListenAddrs(), ",")
	common := []string{"WAITQ_KAFKA_BROKERS=" + brokers, "WAITQ_REDIS_URL=" + sys.Redis.URL()}
	producer := startProc(t, "producer-api", append(common,
		"WAITQ_TICKET_SECRET="+ticketSecret, "WAITQ_ADMIN_TOKEN="+adminToken,
		"WAITQ_RATE=0")...) // every join comes from 127.0.0.1
	consumer := startProc(t, "ingest-consumer", append(common,
		"WAITQ_KAFKA_SESSION_TIMEOUT=1500ms", "WAITQ_DISCOVERY_INTERVAL=200ms")...)

	ev := testenv.EventID(t)
	base := "http://" + producer.addr
	req, _ := http.NewRequest(http.MethodPut, base+"/v1/admin/events/"+ev, strings.NewReader(`{"capacity":10,"partitions":4}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create event: %v %v", resp, err)
	}

	const workers, perWorker = 8, 400
	var (
		sent, acked atomic.Int64
		mu          sync.Mutex
		stamps      = map[string]int64{}
		wg          sync.WaitGroup
	)
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				u := fmt.Sprintf("w%d-u%03d", w, i)
				time.Sleep(10 * time.Millisecond) // a steady stream that outlasts the kills
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/events/"+ev+"/queue", nil)
				req.Header.Set("X-User-Id", u)
				sent.Add(1)
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("join %s: %v", u, err)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					t.Errorf("join %s: %d %s", u, resp.StatusCode, body)
					continue
				}
				var j struct{ JoinedAt int64 }
				_ = json.Unmarshal(body, &j)
				acked.Add(1)
				mu.Lock()
				stamps[u] = j.JoinedAt
				mu.Unlock()
			}
		})
	}
	// Kill the consumer twice while joins flow, restarting it each time.
	// Each kill waits until the running consumer has fetched messages, that
	// is, until it finished joining the group: kfake starts a member's
	// session timer only once its JoinGroup reply is delivered, so a member
	// killed in mid-join would keep its partitions forever (real Kafka
	// times it out).
	for kill := range 2 {
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			n, fetched := acked.Load(), consumer.metric(t, "waitq_ingest_fetched_total")
			return n >= int64((kill+1)*workers*perWorker/4) && fetched > 0, fmt.Sprintf("%d joins acknowledged, %v fetched by the consumer", n, fetched)
		})
		consumer.kill()
		at := acked.Load()
		t.Logf("consumer SIGKILLed after %d acknowledged joins", at)
		if at >= workers*perWorker {
			t.Fatalf("kill %d came after the stream ended; the test proves nothing", kill+1)
		}
		time.Sleep(300 * time.Millisecond) // joins pile up in Kafka meanwhile
		consumer.restart()
	}
	wg.Wait()

	var line []testsys.WaitingUser
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		line = sys.Waiting(ev)
		return len(line) >= int(acked.Load()), fmt.Sprintf("%d of %d acknowledged joins in line", len(line), acked.Load())
	})
	found := 0
	for _, u := range line {
		ts, ok := stamps[u.User]
		if !ok {
			t.Errorf("unexpected user %s in line", u.User)
			continue
		}
		if u.TS != ts {
			t.Errorf("user %s has score %d, stamp was %d", u.User, u.TS, ts)
		}
		found++
	}
	lost := int(acked.Load()) - found
	t.Logf("joins sent %d, acknowledged %d, found in Redis %d, lost %d", sent.Load(), acked.Load(), found, lost)
	if lost != 0 || found != workers*perWorker {
		t.Fatalf("lost %d acknowledged joins (found %d of %d)", lost, found, workers*perWorker)
	}
}

// TestBadConfigurationRefusesToStart runs the binaries with settings they
// must reject, and checks they exit non-zero with a message naming the
// setting.
func TestBadConfigurationRefusesToStart(t *testing.T) {
	tests := []struct {
		bin  string
		env  []string
		want string
	}{
		{"producer-api", nil, "WAITQ_TICKET_SECRET"},
		{"producer-api", []string{"WAITQ_TICKET_SECRET=short"}, "WAITQ_TICKET_SECRET"},
		{"producer-api", []string{"WAITQ_TICKET_SECRET=" + ticketSecret, "WAITQ_PUBLISH_TIMEOUT=soon"}, "WAITQ_PUBLISH_TIMEOUT"},
		{"ingest-consumer", []string{"WAITQ_KAFKA_BROKERS= , "}, "WAITQ_KAFKA_BROKERS"},
		{"ingest-consumer", []string{"WAITQ_MAX_BATCH=0"}, "WAITQ_MAX_BATCH"},
		{"ingest-consumer", []string{"WAITQ_LOG_LEVEL=loud"}, "WAITQ_LOG_LEVEL"},
		{"ws-gateway", nil, "WAITQ_TICKET_SECRET"},
		{"ws-gateway", []string{"WAITQ_TICKET_SECRET=" + ticketSecret, "WAITQ_DISCONNECT_GRACE=5s"}, "WAITQ_DISCONNECT_GRACE"},
		{"ws-gateway", []string{"WAITQ_TICKET_SECRET=" + ticketSecret, "WAITQ_TRUST_USER_HEADER=maybe"}, "WAITQ_TRUST_USER_HEADER"},
		{"ws-gateway", []string{"WAITQ_TICKET_SECRET=" + ticketSecret, "WAITQ_WS_SEND_QUEUE=0"}, "WAITQ_WS_SEND_QUEUE"},
	}
	for _, tc := range tests {
		t.Run(tc.bin+" "+strings.Join(tc.env, " "), func(t *testing.T) {
			out, err := runOnce(t, tc.bin, tc.env...)
			if err == nil {
				t.Fatalf("%s started with %v; output:\n%s", tc.bin, tc.env, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("error does not name %s:\n%s", tc.want, out)
			}
		})
	}
}

package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/testkit/testclient"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testredis"
	"github.com/waitq/waitq/internal/testkit/testsys"
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
	api := testclient.Producer{Base: producer.URL(), AdminToken: adminToken}
	api.CreateEvent(t, ev, `{"capacity":10,"partitions":4}`)

	const workers, perWorker = 8, 400
	// A steady stream that outlasts the kills.
	stream := api.StartStream(t, ev, workers, perWorker, 10*time.Millisecond)
	// Kill the consumer twice while joins flow, restarting it each time.
	// Each kill waits until the running consumer has fetched messages, that
	// is, until it finished joining the group: kfake starts a member's
	// session timer only once its JoinGroup reply is delivered, so a member
	// killed in mid-join would keep its partitions forever (real Kafka
	// times it out).
	for kill := range 2 {
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			n, fetched := stream.Acked.Load(), consumer.metric(t, "waitq_ingest_fetched_total")
			return n >= int64((kill+1)*workers*perWorker/4) && fetched > 0, fmt.Sprintf("%d joins acknowledged, %v fetched by the consumer", n, fetched)
		})
		consumer.Kill()
		at := stream.Acked.Load()
		t.Logf("consumer SIGKILLed after %d acknowledged joins", at)
		if at >= workers*perWorker {
			t.Fatalf("kill %d came after the stream ended; the test proves nothing", kill+1)
		}
		time.Sleep(300 * time.Millisecond) // joins pile up in Kafka meanwhile
		consumer.restart()
	}
	found, lost := stream.WaitForLine(sys.Store.Client(), ev, 60*time.Second)
	stream.ExpectRefusals() // every join is answered 202
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
		{"ingest-consumer", []string{"WAITQ_REDIS_URL=http://127.0.0.1:6379"}, "WAITQ_REDIS_URL"},
		{"ingest-consumer", []string{"WAITQ_REDIS_CLUSTER=127.0.0.1:7000,127.0.0.1"}, "WAITQ_REDIS_CLUSTER"},
		{"producer-api", []string{"WAITQ_TICKET_SECRET=" + ticketSecret, "WAITQ_REDIS_CLUSTER=127.0.0.1:7000", "WAITQ_REDIS_URL=redis://127.0.0.1:6379/3"}, "database 0 only"},
		{"ws-gateway", nil, "WAITQ_TICKET_SECRET"},
		{"ws-gateway", []string{"WAITQ_TICKET_SECRET=" + ticketSecret, "WAITQ_DISCONNECT_GRACE=5s"}, "WAITQ_DISCONNECT_GRACE"},
		{"ws-gateway", []string{"WAITQ_TICKET_SECRET=" + ticketSecret, "WAITQ_TRUST_USER_HEADER=maybe"}, "WAITQ_TRUST_USER_HEADER"},
		{"ws-gateway", []string{"WAITQ_TICKET_SECRET=" + ticketSecret, "WAITQ_WS_SEND_QUEUE=0"}, "WAITQ_WS_SEND_QUEUE"},
		{"ws-gateway", []string{"WAITQ_TICKET_SECRET=" + ticketSecret, "WAITQ_STATUS_SPREAD=5s"}, "WAITQ_STATUS_SPREAD"},
		{"ws-gateway", []string{"WAITQ_TICKET_SECRET=" + ticketSecret, "WAITQ_CONNECT_RATE=-1"}, "WAITQ_CONNECT_RATE"},
		{"ws-gateway", []string{"WAITQ_TICKET_SECRET=" + ticketSecret, "WAITQ_WS_FRAME_BURST=0"}, "WAITQ_WS_FRAME_BURST"},
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

package test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/internal/testkit/testws"
)

// TestSIGTERMStopsEveryServiceCleanly stops each service with SIGTERM while
// it is busy: each exits 0 within its shutdown timeout and says so; the
// gateway closes its sockets with 1001 first.
func TestSIGTERMStopsEveryServiceCleanly(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	common := []string{"WAITQ_KAFKA_BROKERS=" + strings.Join(sys.Kafka.ListenAddrs(), ","), "WAITQ_REDIS_URL=" + sys.Redis.URL(),
		"WAITQ_TICKET_SECRET=" + ticketSecret, "WAITQ_SHUTDOWN_TIMEOUT=3s"}
	producer := startProc(t, "producer-api", append(common, "WAITQ_ADMIN_TOKEN="+adminToken)...)
	consumer := startProc(t, "ingest-consumer", append(common, "WAITQ_KAFKA_SESSION_TIMEOUT=1500ms", "WAITQ_DISCOVERY_INTERVAL=200ms")...)
	gw := startProc(t, "ws-gateway", append(common, "WAITQ_STATUS_INTERVAL=100ms", "WAITQ_ADMIT_INTERVAL=100ms", "WAITQ_DISCONNECT_GRACE=1s")...)

	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 5, 1)
	sys.Join(ev, "u", 1)
	tickets := newTicketSigner(t)
	c, err := testws.Dial(t, "ws://"+gw.Addr()+"/queue-status/"+ev+"?ticket="+ticketFor(tickets, ev, "u"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Admitted(10 * time.Second)

	for _, p := range []*proc{gw, consumer, producer} {
		start := time.Now()
		err := p.Stop(time.Minute)
		took := time.Since(start)
		if err != nil {
			t.Errorf("%s exited with %v after SIGTERM\n%s", p.name, err, p.Output())
		}
		if took > 8*time.Second {
			t.Errorf("%s took %v to stop with a 3 s shutdown timeout", p.name, took)
		}
		if !strings.Contains(p.Output(), `"msg":"stopped"`) {
			t.Errorf("%s did not log its stop", p.name)
		}
		if _, err := http.Get(p.URL() + "/healthz"); err == nil {
			t.Errorf("%s still answers after it stopped", p.name)
		}
	}
	if code := c.CloseCode(5 * time.Second); code != websocket.StatusGoingAway {
		t.Errorf("the gateway closed its socket with %d, want 1001", code)
	}
}

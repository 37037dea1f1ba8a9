package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/internal/testkit/testws"
)

// TestTwoGatewaysOneKilled runs producer-api, ingest-consumer and two
// ws-gateways as processes. Users watch from either gateway and are admitted
// up to the capacity by whichever monitor ticks first; one gateway is
// SIGKILLed, its client reconnects to the other with the same ticket and
// keeps its place, and a release through the survivor lets it in.
func TestTwoGatewaysOneKilled(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	common := []string{"WAITQ_KAFKA_BROKERS=" + strings.Join(sys.Kafka.ListenAddrs(), ","), "WAITQ_REDIS_URL=" + sys.Redis.URL(), "WAITQ_TICKET_SECRET=" + ticketSecret}
	producer := startProc(t, "producer-api", append(common, "WAITQ_ADMIN_TOKEN="+adminToken)...)
	// The consumer admits nobody itself (no fast track): who gets the two
	// slots is decided by the monitors from a line in stamp order, not by
	// which partition the consumer happens to write first.
	startProc(t, "ingest-consumer", append(common, "WAITQ_KAFKA_SESSION_TIMEOUT=1500ms", "WAITQ_DISCOVERY_INTERVAL=200ms", "WAITQ_FAST_TRACK=false")...)
	gwEnv := append(common, "WAITQ_STATUS_INTERVAL=100ms", "WAITQ_ADMIT_INTERVAL=200ms", "WAITQ_DISCONNECT_GRACE=3s")
	gwA := startProc(t, "ws-gateway", gwEnv...)
	gwB := startProc(t, "ws-gateway", gwEnv...)

	ev := testenv.EventID(t)
	base := producer.URL()
	req, _ := http.NewRequest(http.MethodPut, base+"/v1/admin/events/"+ev, strings.NewReader(`{"capacity":2,"staySeconds":600,"partitions":2}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create event: %v %v", resp, err)
	}
	tickets := make([]string, 4)
	for i := range tickets {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/events/"+ev+"/queue", nil)
		req.Header.Set("X-User-Id", fmt.Sprintf("u%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("join u%d: %v %v", i, resp, err)
		}
		var j struct{ Ticket string }
		_ = json.NewDecoder(resp.Body).Decode(&j)
		resp.Body.Close()
		tickets[i] = j.Ticket
		time.Sleep(3 * time.Millisecond) // distinct stamps
	}
	dial := func(gw *proc, i int) *testws.Client {
		c, err := testws.Dial(t, "ws://"+gw.Addr()+"/queue-status/"+ev+"?ticket="+tickets[i], nil)
		if err != nil {
			t.Fatalf("u%d to %s: %v", i, gw.Addr(), err)
		}
		return c
	}
	// u0 and u2 watch through A, u1 and u3 through B.
	clients := []*testws.Client{dial(gwA, 0), dial(gwB, 1), dial(gwA, 2), dial(gwB, 3)}
	a0 := clients[0].Admitted(10 * time.Second)
	clients[1].Admitted(10 * time.Second)
	clients[2].Status(testws.Waiting(1, 2), 10*time.Second)
	clients[3].Status(testws.Waiting(2, 2), 10*time.Second)

	// Gateway A dies; u2 comes back through B within the grace.
	gwA.Kill()
	if code := clients[2].CloseCode(10 * time.Second); code != -1 {
		t.Logf("u2's socket ended with %d", code)
	}
	time.Sleep(time.Second)
	u2 := dial(gwB, 2)
	u2.Status(testws.Waiting(1, 2), 10*time.Second)

	// The protected service releases u0's slot through B with u0's token.
	resp, err := http.Post(gwB.URL()+"/v1/events/"+ev+"/release", "application/json", strings.NewReader(`{"token":"`+a0.EntryToken+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var r gateway.ReleaseResponse
	_ = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !r.Released {
		t.Fatalf("release: %d %+v", resp.StatusCode, r)
	}
	u2.Admitted(10 * time.Second)
	clients[3].Status(testws.Waiting(1, 1), 10*time.Second)
	if st, err := sys.Store.EventStatus(t.Context(), ev, time.Now().UnixMilli()); err != nil || st.Holders != 2 || st.AdmittedTotal != 3 || st.Waiting != 1 {
		t.Fatalf("event after the release: %+v %v", st, err)
	}
}

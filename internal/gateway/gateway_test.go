package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/testkit/contract"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/internal/testkit/testws"
)

// fast is a configuration for tests: quick status rounds, and a slot monitor
// that runs only when the test calls MonitorTick.
var fast = gateway.Config{StatusInterval: 50 * time.Millisecond, AdmitInterval: time.Hour, DisconnectGrace: time.Hour}

// loopback are the trusted proxies of the tests in trust mode: the test
// client stands where the authenticating proxy would.
var loopback = []string{"127.0.0.1", "::1"}

// TestWholePipeline joins users over HTTP through producer-api, Kafka and the
// consumer, watches them over WebSocket, and admits them with the slot
// monitor: positions follow join order, admission fills the capacity in
// order, a release frees exactly one slot, and ended holds free theirs.
func TestWholePipeline(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	e := startGateway(t, sys, fast, nil)
	api, err := producer.New(producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: "admin-token"}, producer.Deps{
		Store: sys.Store, Topics: sys.Pub.Admin(), Publisher: sys.Pub, Tickets: e.tickets, Logger: testenv.Logger(t), Now: e.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	prod := httptest.NewServer(contract.Producer(t).Handler(t, api))
	defer prod.Close()
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 3, 3) // hold 60 s

	const n = 8
	clients := make([]*testws.Client, n)
	for i := range n {
		user := fmt.Sprintf("user%d", i)
		req, _ := http.NewRequest(http.MethodPost, prod.URL+"/v1/events/"+ev+"/queue", nil)
		req.Header.Set(httpkit.UserHeader, user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("join %s: %v %v", user, resp, err)
		}
		var j producer.JoinResponse
		_ = json.NewDecoder(resp.Body).Decode(&j)
		resp.Body.Close()
		if clients[i], err = e.dial(t, ev, j.Ticket, nil); err != nil {
			t.Fatalf("connect %s with its ticket: %v", user, err)
		}
		e.clock.Add(time.Millisecond) // distinct stamps: join order is stamp order
	}
	for i, c := range clients {
		c.Status(waiting(int64(i+1), n), 10*time.Second)
	}

	// The monitor fills the three slots from the head of the line.
	before := e.clock.Now().Add(60 * time.Second).UnixMilli()
	e.gw.MonitorTick(context.Background())
	after := e.clock.Now().Add(60 * time.Second).UnixMilli()
	for i := range 3 {
		a := clients[i].Admitted(5 * time.Second)
		tok, err := e.entry.Verify(a.EntryToken, ev, e.clock.Now())
		if err != nil || tok.UserID != fmt.Sprintf("user%d", i) || a.ExpiresAt < before || a.ExpiresAt > after || tok.Expires != a.ExpiresAt {
			t.Fatalf("admitted frame %+v: token %+v, %v", a, tok, err)
		}
		clients[i].Status(inState(gateway.StateAdmitted), 5*time.Second)
	}
	for i := 3; i < n; i++ {
		clients[i].Status(waiting(int64(i-2), n-3), 5*time.Second)
	}

	// user0 gives the slot back, twice: exactly one slot comes free.
	clients[0].Send(`{"type":"release"}`)
	clients[0].Status(inState(gateway.StateExpired), 5*time.Second)
	clients[0].Send(`{"type":"release"}`)
	e.gw.MonitorTick(context.Background())
	clients[3].Admitted(5 * time.Second)
	clients[4].Status(waiting(1, n-4), 5*time.Second)
	if st, _ := sys.Store.EventStatus(context.Background(), ev, e.clock.Now().UnixMilli()); st.Holders != 3 || st.AdmittedTotal != 4 {
		t.Fatalf("after one release: %+v", st)
	}

	// The holds end: the next users get the slots, in order.
	e.clock.Add(61 * time.Second)
	e.gw.MonitorTick(context.Background())
	for i := 4; i < 7; i++ {
		clients[i].Admitted(5 * time.Second)
	}
	clients[7].Status(waiting(1, 1), 5*time.Second)
	clients[1].Status(inState(gateway.StateExpired), 5*time.Second)
	if st, _ := sys.Store.EventStatus(context.Background(), ev, e.clock.Now().UnixMilli()); st.Holders != 3 || st.AdmittedTotal != 7 || st.Waiting != 1 {
		t.Fatalf("after the holds ended: %+v", st)
	}
	resp, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`waitq_event_holders{event="` + ev + `"} 3`, `waitq_event_waiting{event="` + ev + `"} 1`, "waitq_admitted_total 7"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

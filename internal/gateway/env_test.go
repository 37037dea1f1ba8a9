package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/stack/promtext"
	"github.com/waitq/waitq/internal/testkit/contract"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/internal/testkit/testws"
	"github.com/waitq/waitq/pkg/entry"
)

const ticketSecret = "gateway-test-secret"

// clock is real time plus an offset a test can push forward, shared by a
// test and its gateways: holds end when the test says so.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func newClock() *clock { return &clock{} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Add moves the clock forward by d.
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

type gwEnv struct {
	sys     *testsys.System
	gw      *gateway.Server
	srv     *httptest.Server
	tickets *queue.TicketSigner
	entry   *entry.Keyring
	clock   *clock
	stop    func() // ends Run and waits for it, as a shutdown does; the HTTP server stays
}

// startGateway runs a gateway over sys with cfg, behind a listener with the
// default send buffer as in production; its loops stop at cleanup.
func startGateway(t *testing.T, sys *testsys.System, cfg gateway.Config, clk *clock) *gwEnv {
	t.Helper()
	return startGatewayBuf(t, sys, cfg, clk, gateway.DefaultWriteBuffer)
}

func startGatewayBuf(t *testing.T, sys *testsys.System, cfg gateway.Config, clk *clock, sendBuffer int) *gwEnv {
	t.Helper()
	return startGatewayOn(t, sys, sys.Store, cfg, clk, sendBuffer)
}

// startGatewayOn runs a gateway over store (sys's, or sys's with the fast
// track on) with cfg.
func startGatewayOn(t *testing.T, sys *testsys.System, store queue.GatewayStore, cfg gateway.Config, clk *clock, sendBuffer int) *gwEnv {
	t.Helper()
	tickets, err := queue.NewTicketSigner(ticketSecret)
	if err != nil {
		t.Fatal(err)
	}
	if clk == nil {
		clk = newClock()
	}
	keys, err := entry.DerivedKeyring(ticketSecret, nil)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(cfg, gateway.Deps{Store: store, Publisher: sys.Pub, Tickets: tickets, Entry: keys, Logger: testenv.Logger(t), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gw.Run(ctx)
	}()
	<-gw.Started() // a socket before would be refused 503
	srv := httptest.NewUnstartedServer(contract.Gateway(t).Handler(t, gw))
	srv.Listener = gateway.LimitWriteBuffer(srv.Listener, sendBuffer)
	srv.Start()
	stop := func() {
		cancel()
		<-done
	}
	t.Cleanup(func() {
		stop()
		srv.Close()
	})
	return &gwEnv{sys: sys, gw: gw, srv: srv, tickets: tickets, entry: keys, clock: clk, stop: stop}
}

// ticket signs a ticket of user for ev, as producer-api does at the join.
func (e *gwEnv) ticket(ev, user string) string {
	now := e.clock.Now()
	return e.tickets.Sign(queue.Ticket{EventID: ev, UserID: user, JoinedAt: now.UnixMilli(), Expires: now.Add(time.Hour).UnixMilli()})
}

func (e *gwEnv) wsURL(path string) string { return "ws" + strings.TrimPrefix(e.srv.URL, "http") + path }

func (e *gwEnv) dial(t *testing.T, ev, ticket string, hdr http.Header) (*testws.Client, error) {
	t.Helper()
	return testws.Dial(t, e.wsURL("/queue-status/"+ev+"?ticket="+ticket), hdr)
}

// dialURL opens a socket to path (with its query) on the gateway.
func (e *gwEnv) dialURL(t *testing.T, path string) (*testws.Client, error) {
	t.Helper()
	return testws.Dial(t, e.wsURL(path), nil)
}

func (e *gwEnv) connect(t *testing.T, ev, user string) *testws.Client {
	t.Helper()
	c, err := e.dial(t, ev, e.ticket(ev, user), nil)
	if err != nil {
		t.Fatalf("connect %s: %v", user, err)
	}
	return c
}

var (
	waiting = testws.Waiting
	inState = testws.InState
)

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(contract.Gateway(t).Handler(t, h))
	t.Cleanup(srv.Close)
	return srv
}

// metricValue reads an unlabelled metric from the gateway's /metrics, or -1.
func metricValue(t *testing.T, e *gwEnv, name string) float64 {
	t.Helper()
	m, err := promtext.Scrape(t.Context(), http.DefaultClient, e.srv.URL+"/metrics")
	if v, ok := m[name]; err == nil && ok {
		return v
	}
	return -1
}

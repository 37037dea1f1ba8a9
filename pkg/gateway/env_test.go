package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/testenv"
	"github.com/waitq/waitq/internal/testsys"
	"github.com/waitq/waitq/pkg/gateway"
	"github.com/waitq/waitq/pkg/queue"
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
	clock   *clock
}

// startGateway runs a gateway over sys with cfg, behind a listener with the
// default send buffer as in production; its loops stop at cleanup.
func startGateway(t *testing.T, sys *testsys.System, cfg gateway.Config, clk *clock) *gwEnv {
	t.Helper()
	return startGatewayBuf(t, sys, cfg, clk, gateway.DefaultWriteBuffer)
}

func startGatewayBuf(t *testing.T, sys *testsys.System, cfg gateway.Config, clk *clock, sendBuffer int) *gwEnv {
	t.Helper()
	tickets, err := queue.NewTicketSigner(ticketSecret)
	if err != nil {
		t.Fatal(err)
	}
	if clk == nil {
		clk = newClock()
	}
	gw := gateway.New(cfg, gateway.Deps{Store: sys.Store, Publisher: sys.Pub, Tickets: tickets, Logger: testenv.Logger(t), Now: clk.Now})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gw.Run(ctx)
	}()
	srv := httptest.NewUnstartedServer(gw)
	srv.Listener = gateway.LimitWriteBuffer(srv.Listener, sendBuffer)
	srv.Start()
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
	})
	return &gwEnv{sys: sys, gw: gw, srv: srv, tickets: tickets, clock: clk}
}

// ticket signs a ticket of user for ev, as producer-api does at the join.
func (e *gwEnv) ticket(ev, user string) string {
	now := e.clock.Now()
	return e.tickets.Sign(queue.Ticket{EventID: ev, UserID: user, JoinedAt: now.UnixMilli(), Expires: now.Add(time.Hour).UnixMilli()})
}

func (e *gwEnv) wsURL(path string) string { return "ws" + strings.TrimPrefix(e.srv.URL, "http") + path }

// client is a real WebSocket client that collects the frames it reads.
type client struct {
	t      *testing.T
	ws     *websocket.Conn
	frames chan frame
	closed chan error // the error that ended reading, with its close code
}

type frame struct {
	raw []byte
	at  time.Time
	typ string
}

func (e *gwEnv) dial(t *testing.T, ev, ticket string, hdr http.Header) (*client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, e.wsURL("/queue-status/"+ev+"?ticket="+ticket), &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		return nil, err
	}
	c := &client{t: t, ws: ws, frames: make(chan frame, 1024), closed: make(chan error, 1)}
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				c.closed <- err
				return
			}
			var h struct{ Type string }
			_ = json.Unmarshal(b, &h)
			select {
			case c.frames <- frame{raw: b, at: time.Now(), typ: h.Type}:
			default:
				t.Errorf("client frame buffer full")
			}
		}
	}()
	t.Cleanup(func() { _ = ws.CloseNow() })
	return c, nil
}

func (e *gwEnv) connect(t *testing.T, ev, user string) *client {
	t.Helper()
	c, err := e.dial(t, ev, e.ticket(ev, user), nil)
	if err != nil {
		t.Fatalf("connect %s: %v", user, err)
	}
	return c
}

// status waits for a status frame that satisfies ok.
func (c *client) status(ok func(gateway.StatusFrame) bool, within time.Duration) gateway.StatusFrame {
	c.t.Helper()
	deadline := time.After(within)
	var last gateway.StatusFrame
	for {
		select {
		case f := <-c.frames:
			if f.typ != "status" {
				continue
			}
			last = gateway.StatusFrame{}
			if err := json.Unmarshal(f.raw, &last); err != nil {
				c.t.Fatal(err)
			}
			if ok(last) {
				return last
			}
		case err := <-c.closed:
			c.t.Fatalf("socket closed while waiting for a status: %v", err)
		case <-deadline:
			c.t.Fatalf("no matching status within %v; last %+v", within, last)
		}
	}
}

// admitted waits for the admitted frame.
func (c *client) admitted(within time.Duration) gateway.AdmittedFrame {
	c.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case f := <-c.frames:
			if f.typ != "admitted" {
				continue
			}
			var a gateway.AdmittedFrame
			if err := json.Unmarshal(f.raw, &a); err != nil {
				c.t.Fatal(err)
			}
			return a
		case err := <-c.closed:
			c.t.Fatalf("socket closed while waiting for admission: %v", err)
		case <-deadline:
			c.t.Fatalf("not admitted within %v", within)
		}
	}
}

// closeCode waits for the server to close the socket and returns the code.
func (c *client) closeCode(within time.Duration) websocket.StatusCode {
	c.t.Helper()
	select {
	case err := <-c.closed:
		return websocket.CloseStatus(err)
	case <-time.After(within):
		c.t.Fatalf("socket still open after %v", within)
	}
	return -1
}

func (c *client) sendFrame(v string) {
	c.t.Helper()
	if err := c.ws.Write(context.Background(), websocket.MessageText, []byte(v)); err != nil {
		c.t.Fatalf("send %s: %v", v, err)
	}
}

// waiting returns a predicate for "waiting at position with total".
func waiting(position, total int64) func(gateway.StatusFrame) bool {
	return func(f gateway.StatusFrame) bool {
		return f.State == gateway.StateWaiting && f.Position == position && f.Total == total
	}
}

func inState(s gateway.State) func(gateway.StatusFrame) bool {
	return func(f gateway.StatusFrame) bool { return f.State == s }
}

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// metricValue reads an unlabelled metric from the gateway's /metrics.
func metricValue(t *testing.T, e *gwEnv, name string) float64 {
	t.Helper()
	resp, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestConnectsAreLimitedPerAddress: past its burst, an address gets 429
// with Retry-After before any upgrade or stream, sockets and SSE streams
// drawing on one budget, while another address and the sockets already
// open go on.
func TestConnectsAreLimitedPerAddress(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	cfg := slow
	cfg.ConnectLimit = httpkit.RateLimit{PerSecond: 0.01, Burst: 3}
	e := startGateway(t, sys, cfg, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "a", 100)
	sys.StartConsumer(sys.ConsumerConfig())

	waitForLine(t, sys, ev, 1)
	first := e.connect(t, ev, "a")
	first.Status(waiting(1, 1), 10*time.Second)
	for range 2 {
		e.connect(t, ev, "a")
	}
	waitSockets(t, e, 3)

	// The fourth connect from 127.0.0.1: a plain GET with the upgrade
	// headers, to see the answer the WebSocket library would hide.
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/queue-status/"+ev+"?ticket="+e.ticket(ev, "a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body httpkit.ErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("429 body: %v", err)
	}
	if resp.StatusCode != http.StatusTooManyRequests || body.Error.Code != queue.CodeRateLimited || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("fourth connect: %d %+v Retry-After %q, want 429 rate_limited with Retry-After", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if _, err := e.dial(t, ev, e.ticket(ev, "a"), nil); err == nil {
		t.Fatal("a fifth connect through the WebSocket client was not refused")
	}
	// An SSE stream draws on the same budget.
	stream, err := http.Get(e.srv.URL + "/v1/events/" + ev + "/stream?ticket=" + e.ticket(ev, "a"))
	if err != nil {
		t.Fatal(err)
	}
	stream.Body.Close()
	if stream.StatusCode != http.StatusTooManyRequests || stream.Header.Get("Content-Type") == "text/event-stream" {
		t.Fatalf("a stream past the budget: %d %s, want 429 before the stream", stream.StatusCode, stream.Header.Get("Content-Type"))
	}
	waitSockets(t, e, 3)

	// Another address has its own budget.
	other := dialFrom(t, "127.0.0.2", e.wsURL("/queue-status/"+ev+"?ticket="+e.ticket(ev, "a")))
	defer other.CloseNow()
	waitSockets(t, e, 4)
}

// waitSockets waits until the gateway holds n sockets.
func waitSockets(t *testing.T, e *gwEnv, n int) {
	t.Helper()
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return e.gw.Sockets() == n, fmt.Sprintf("%d sockets open, want %d", e.gw.Sockets(), n)
	})
}

// waitForLine waits until n users wait in ev's line in Redis.
func waitForLine(t *testing.T, sys *testsys.System, ev string, n int) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		got := len(sys.Waiting(ev))
		return got == n, fmt.Sprintf("%d of %d users in line", got, n)
	})
}

// dialFrom opens a WebSocket to url from the local address ip.
func dialFrom(t *testing.T, ip, url string) *websocket.Conn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	return ws
}

// TestClientFramesAreLimitedPerSocket: frames past a socket's budget are
// answered with rate_limited and not acted on; the budget refills; a
// client that keeps sending is closed with 1008, not counted as slow, and
// the other sockets do not notice.
func TestClientFramesAreLimitedPerSocket(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	cfg := slow
	cfg.FrameLimit = httpkit.RateLimit{PerSecond: 4, Burst: 2}
	e := startGateway(t, sys, cfg, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "a", 100)
	sys.Join(ev, "b", 200)
	waitForLine(t, sys, ev, 2)
	a := e.connect(t, ev, "a")
	a.Status(waiting(1, 2), 10*time.Second)
	b := e.connect(t, ev, "b")
	b.Status(waiting(2, 2), 10*time.Second)

	// Two releases (of nothing: a waits) are acted on, each answered with a
	// fresh status; the third, sent at once, is refused.
	for range 3 {
		a.Send(`{"type":"release"}`)
	}
	// The refusal is written at once, the answers after a Redis read: take
	// the three frames in whatever order they come.
	statuses, refusals := 0, 0
	for statuses+refusals < 3 {
		select {
		case f := <-a.Frames:
			switch f.Type {
			case "status":
				statuses++
			case "error":
				var ef gateway.ErrorFrame
				if err := json.Unmarshal(f.Raw, &ef); err != nil || ef.Code != queue.CodeRateLimited || !strings.Contains(ef.Message, "too many frames") {
					t.Fatalf("third frame: %s, want rate_limited", f.Raw)
				}
				refusals++
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("after three releases: %d statuses and %d refusals", statuses, refusals)
		}
	}
	if statuses != 2 || refusals != 1 {
		t.Fatalf("three releases at once: %d answered, %d refused; want 2 and 1", statuses, refusals)
	}
	if got := metricValue(t, e, "waitq_ws_client_frames_refused_total"); got != 1 {
		t.Fatalf("frames refused: %v, want 1", got)
	}
	// A refused leave is not published: a is still in line after it.
	a.Send(`{"type":"leave"}`)
	if f := a.ErrorFrame(5 * time.Second); f.Code != queue.CodeRateLimited {
		t.Fatalf("leave over the budget: %+v", f)
	}
	time.Sleep(600 * time.Millisecond) // the budget refills (4 a second)
	a.Send(`{"type":"release"}`)
	a.Status(waiting(1, 2), 5*time.Second)

	// A flood: the socket is closed with 1008 once ten frames in a row are
	// refused.
	for range 2 + 10 {
		a.Send(`{"type":"release"}`)
	}
	if code := a.CloseCode(5 * time.Second); code != httpkit.CloseTooManyFrames {
		t.Fatalf("flooding socket closed with %d, want %d", code, httpkit.CloseTooManyFrames)
	}
	if got := metricValue(t, e, "waitq_ws_slow_closed_total"); got != 0 {
		t.Fatalf("the flood was counted as a slow reader: %v", got)
	}
	// Nothing the flood sent was acted on: a is still first in line, and b
	// still gets its statuses.
	sys.Join(ev, "c", 300)
	waitForLine(t, sys, ev, 3)
	again := e.connect(t, ev, "a")
	again.Status(waiting(1, 3), 10*time.Second)
	b.Send(`{"type":"release"}`)
	b.Status(waiting(2, 3), 5*time.Second)
}

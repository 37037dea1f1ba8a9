package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/internal/testkit/testws"
)

// streamPath is the stream route of user's ticket for ev, with more query.
func (e *gwEnv) streamPath(ev, user, more string) string {
	return e.srv.URL + "/v1/events/" + ev + "/stream?ticket=" + e.ticket(ev, user) + more
}

// stream opens user's event stream for ev with hdr.
func (e *gwEnv) stream(t *testing.T, ev, user string, hdr http.Header) (*testws.Client, func()) {
	t.Helper()
	c, cancel, err := testws.DialSSE(t, e.streamPath(ev, user, ""), hdr)
	if err != nil {
		t.Fatalf("stream of %s: %v", user, err)
	}
	return c, cancel
}

// TestStreamGreets: a stream gets its first status at once, long before the
// first status round (an hour away), with the retry: the contract names and
// the headers that keep proxies from buffering or caching it.
func TestStreamGreets(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	e := startGateway(t, sys, gateway.Config{StatusInterval: time.Hour, AdmitInterval: time.Hour, DisconnectGrace: 3 * time.Hour}, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "first", 100)
	sys.Join(ev, "second", 200)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) { return len(sys.Waiting(ev)) == 2, "joins not ingested" })

	resp, err := http.Get(e.streamPath(ev, "second", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); resp.StatusCode != http.StatusOK || got != want {
			t.Errorf("%d, %s: %q, want %q", resp.StatusCode, k, got, want)
		}
	}
	br := bufio.NewReader(resp.Body)
	var lines []string
	for len(lines) < 5 {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", lines, err)
		}
		lines = append(lines, l)
	}
	var f gateway.StatusFrame
	data, ok := strings.CutPrefix(lines[3], "data: ")
	if lines[0] != "retry: 3000\n" || lines[1] != "\n" || lines[2] != "event: status\n" || lines[4] != "\n" || !ok || json.Unmarshal([]byte(data), &f) != nil {
		t.Fatalf("the stream's head %q", lines)
	}
	if f.State != gateway.StateWaiting || f.Position != 2 || f.Total != 2 || f.UserID != "second" {
		t.Fatalf("greeting %+v", f)
	}
}

// TestStreamStatusesAdmissionAndResume: a stream gets a status every
// interval, in agreement with the socket and the poll of the same user;
// its admitted frame has the admission's id and a valid token. A stream
// that resumes with that id as Last-Event-ID is not sent the token again
// (its statuses say admitted); a fresh stream, one naming another hold and
// one with a malformed id are.
func TestStreamStatusesAdmissionAndResume(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	const interval = 100 * time.Millisecond
	e := startGateway(t, sys, gateway.Config{StatusInterval: interval, AdmitInterval: time.Hour, DisconnectGrace: time.Hour}, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "first", 100)
	sys.Join(ev, "second", 200)

	first, _ := e.stream(t, ev, "first", nil)
	second, _ := e.stream(t, ev, "second", nil)
	second.Status(waiting(2, 2), 10*time.Second)

	// A status every interval, no id on any.
	var frames []testws.Frame
	deadline := time.After(12 * interval)
	for collecting := true; collecting; {
		select {
		case f := <-second.Frames:
			frames = append(frames, f)
		case <-deadline:
			collecting = false
		}
	}
	var last int64
	for i, f := range frames {
		var s gateway.StatusFrame
		if err := json.Unmarshal(f.Raw, &s); err != nil || f.Type != "status" || f.ID != "" || f.Retry != 3000 || s.Position != 2 {
			t.Fatalf("frame %d: %s id %q retry %d (%v)", i, f.Raw, f.ID, f.Retry, err)
		}
		if last != 0 && time.Duration(s.TS-last)*time.Millisecond > 3*interval {
			t.Errorf("%v between two statuses, the interval is %v", time.Duration(s.TS-last)*time.Millisecond, interval)
		}
		last = s.TS
	}
	if len(frames) < 8 {
		t.Fatalf("%d statuses in %v at one per %v", len(frames), 12*interval, interval)
	}

	// The socket, the poll and the stream agree.
	ws := e.connect(t, ev, "second")
	ws.Status(waiting(2, 2), 10*time.Second)
	resp, err := http.Get(e.srv.URL + "/v1/events/" + ev + "/status?ticket=" + e.ticket(ev, "second"))
	if err != nil {
		t.Fatal(err)
	}
	var polled gateway.StatusFrame
	_ = json.NewDecoder(resp.Body).Decode(&polled)
	resp.Body.Close()
	if !waiting(2, 2)(polled) {
		t.Fatalf("poll %+v", polled)
	}

	// The admission: an id naming the hold, a token for it.
	e.gw.MonitorTick(context.Background())
	a, id := first.AdmittedEvent(5 * time.Second)
	if tok, err := e.entry.Verify(a.EntryToken, ev, e.clock.Now()); err != nil || tok.UserID != "first" || tok.Expires != a.ExpiresAt {
		t.Fatalf("admitted frame %+v: token %+v, %v", a, tok, err)
	}
	if id != fmt.Sprintf("a%d", a.ExpiresAt) {
		t.Fatalf("admitted frame's id %q, want a%d", id, a.ExpiresAt)
	}
	second.Status(waiting(1, 1), 5*time.Second)
	ws.Status(waiting(1, 1), 5*time.Second)

	resumed, _ := e.stream(t, ev, "first", http.Header{"Last-Event-Id": {id}})
	resumed.Status(inState(gateway.StateAdmitted), 5*time.Second)
	for _, tc := range []struct{ name, lastID string }{{"fresh", ""}, {"another hold", fmt.Sprintf("a%d", a.ExpiresAt-1000)}, {"malformed", "a12x"}} {
		var hdr http.Header
		if tc.lastID != "" {
			hdr = http.Header{"Last-Event-Id": {tc.lastID}}
		}
		c, _ := e.stream(t, ev, "first", hdr)
		f := c.Admitted(5 * time.Second)
		if f.EntryToken == "" || f.ExpiresAt != a.ExpiresAt {
			t.Errorf("%s stream: admitted frame %+v", tc.name, f)
		}
	}
	// Several rounds later the resumed stream still has had no token: its
	// statuses say admitted.
	time.Sleep(5 * interval)
	for _, f := range drain(resumed) {
		var s gateway.StatusFrame
		if err := json.Unmarshal(f.Raw, &s); f.Type != "status" || err != nil || s.State != gateway.StateAdmitted {
			t.Fatalf("the resumed stream got %s (%s)", f.Type, f.Raw)
		}
	}
}

// drain returns the frames c has read so far.
func drain(c *testws.Client) []testws.Frame {
	var out []testws.Frame
	for {
		select {
		case f := <-c.Frames:
			out = append(out, f)
		default:
			return out
		}
	}
}

// TestSlowStreamReaderIsClosed: an SSE client that stops reading is
// closed as too slow while the other streams keep their cadence. Its send
// queue is too long to overflow first: the write watchdog aborts its stuck
// write (through the connection's write deadline), and its handler leaves
// the hub.
func TestSlowStreamReaderIsClosed(t *testing.T) {
	slowReaderIsDropped(t, 4096, func(e *gwEnv, t *testing.T, ev, user string) *testws.Client {
		c, _ := e.stream(t, ev, user, nil)
		return c
	}, func(t *testing.T, e *gwEnv, ev, user string) io.Closer {
		conn, err := tinyReceiveBuffer().Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(conn, "GET /v1/events/%s/stream?ticket=%s HTTP/1.1\r\nHost: gateway\r\n\r\n", ev, e.ticket(ev, user)); err != nil {
			t.Fatal(err)
		}
		return conn
	})
}

// TestStreamKeepAlive: with no status to send for a while, a stream still
// gets a comment line every ping interval, through the frames' path.
func TestStreamKeepAlive(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	const interval = 50 * time.Millisecond
	e := startGateway(t, sys, gateway.Config{StatusInterval: interval, PingInterval: interval, AdmitInterval: time.Hour, DisconnectGrace: time.Hour}, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	resp, err := http.Get(e.streamPath(ev, "u", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	comments, statuses := 0, 0
	for comments < 3 || statuses < 3 {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d comments and %d statuses: %v", comments, statuses, err)
		}
		switch l {
		case ":\n":
			comments++
		case "event: status\n":
			statuses++
		}
	}
}

// TestStreamRefusals: a stream refused before it starts gets the poll's JSON
// errors (SSE has no close codes), a foreign browser origin 403 as the
// socket's upgrade, an allowed one the header that lets it read the stream.
func TestStreamRefusals(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	cfg := fast
	cfg.AllowedOrigins = []string{"localhost:8089"}
	e := startGateway(t, sys, cfg, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	base := e.srv.URL + "/v1/events/"
	for _, tc := range []struct {
		name, url, origin string
		status            int
		code              queue.Code
	}{
		{"bad event id", base + "bad.id/stream?ticket=" + e.ticket("bad.id", "u"), "", 400, queue.CodeInvalidEventID},
		{"no identity", base + ev + "/stream", "", 401, queue.CodeMissingUserID},
		{"garbage ticket", base + ev + "/stream?ticket=v1.not-a-ticket", "", 401, queue.CodeInvalidTicket},
		{"ticket of another event", base + ev + "/stream?ticket=" + e.ticket(ev+"-other", "u"), "", 401, queue.CodeInvalidTicket},
		{"unknown event", base + ev + "-nope/stream?ticket=" + e.ticket(ev+"-nope", "u"), "", 404, queue.CodeEventNotFound},
		{"foreign origin", e.streamPath(ev, "u", ""), "https://evil.example", 403, queue.CodeForbidden},
		{"null origin", e.streamPath(ev, "u", ""), "null", 403, queue.CodeForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var eb httpkit.ErrorBody
			if err := json.NewDecoder(resp.Body).Decode(&eb); resp.StatusCode != tc.status || err != nil || eb.Error.Code != tc.code ||
				!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("%d %s %+v (%v), want %d %s", resp.StatusCode, resp.Header.Get("Content-Type"), eb, err, tc.status, tc.code)
			}
		})
	}
	for _, tc := range []struct{ origin, allow string }{
		{"http://localhost:8089", "http://localhost:8089"},         // allowed: may read it cross-origin
		{"http://" + strings.TrimPrefix(e.srv.URL, "http://"), ""}, // the page's own origin: no CORS needed
	} {
		c, cancel, err := testws.DialSSE(t, e.streamPath(ev, "u", ""), http.Header{"Origin": {tc.origin}})
		if err != nil {
			t.Fatalf("origin %s: %v", tc.origin, err)
		}
		c.Status(inState(gateway.StatePending), 5*time.Second) // a fresh ticket
		cancel()
		req, _ := http.NewRequest(http.MethodGet, e.streamPath(ev, "u", ""), nil)
		req.Header.Set("Origin", tc.origin)
		ctx, stop := context.WithCancel(context.Background())
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tc.allow {
			t.Errorf("origin %s: Access-Control-Allow-Origin %q, want %q", tc.origin, got, tc.allow)
		}
		stop()
		resp.Body.Close()
	}

	// The preflight of a reconnect with Last-Event-ID from another origin.
	for _, tc := range []struct {
		origin string
		status int
		allow  string
	}{{"http://localhost:8089", http.StatusNoContent, "http://localhost:8089"}, {"https://evil.example", http.StatusForbidden, ""}} {
		req, _ := http.NewRequest(http.MethodOptions, e.streamPath(ev, "u", ""), nil)
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Access-Control-Request-Method", "GET")
		req.Header.Set("Access-Control-Request-Headers", "last-event-id")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("Access-Control-Allow-Origin") != tc.allow ||
			(tc.allow != "" && resp.Header.Get("Access-Control-Allow-Headers") != "Last-Event-ID") {
			t.Errorf("preflight from %s: %d %v", tc.origin, resp.StatusCode, resp.Header)
		}
	}
}

// TestStreamBeforeRunAndAtShutdown: a stream is refused with 503 until the
// gateway's loops run; a shutdown ends the streams open (the client reads
// the end of the stream) and refuses new ones.
func TestStreamBeforeRunAndAtShutdown(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	tickets, _ := queue.NewTicketSigner(ticketSecret)
	srv, err := gateway.New(fast, gateway.Deps{Store: sys.Store, Publisher: sys.Pub, Tickets: tickets, Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	idle := newServer(t, srv)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	e := startGateway(t, sys, fast, nil)
	wantUnavailable(t, idle.URL+"/v1/events/"+ev+"/stream?ticket="+e.ticket(ev, "u"))

	c, _ := e.stream(t, ev, "u", nil)
	c.Status(inState(gateway.StatePending), 10*time.Second) // a fresh ticket, not yet in line
	e.stop()
	select {
	case err := <-c.Closed:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("the stream ended with %v, want its end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived the shutdown")
	}
	if n := e.gw.Sockets(); n != 0 {
		t.Fatalf("%d conns left after the shutdown", n)
	}
	wantUnavailable(t, e.streamPath(ev, "u", ""))
}

// wantUnavailable checks that url answers 503 store_unavailable.
func wantUnavailable(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb httpkit.ErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&eb); resp.StatusCode != http.StatusServiceUnavailable || err != nil || eb.Error.Code != queue.CodeStoreUnavailable {
		t.Fatalf("%s: %d %+v, want 503 store_unavailable", url, resp.StatusCode, eb)
	}
}

package gateway

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// The stream route, GET /v1/events/{eventId}/stream, is the socket's frames
// as server-sent events, for clients that cannot open a WebSocket (a proxy
// that refuses the upgrade): the same identity check, answered as a JSON
// error before the stream starts, and a conn in the same hub, greeted and
// ticked like a socket and written by the same write workers. Each frame is
// an event named by its type (event: status|admitted|error) with the
// frame's JSON as its data; only the admitted frame has an id, so a client
// that reconnects names the admission it received (Last-Event-ID) and is
// not handed its token again. The client sends nothing: leave and release
// are the HTTP routes.

// sseRetry is the reconnection delay a stream asks its client for (retry:),
// sent first: a browser's EventSource reconnects after it when the stream
// ends.
const sseRetry = 3 * time.Second

// stream serves GET /v1/events/{eventId}/stream. Its goroutine stays until
// the stream ends (the client went, the conn was closed, the server shuts
// down), and returns only once no write worker can touch the response.
func (s *Server) stream(c echo.Context) error {
	select {
	case <-s.ready:
	default:
		return queue.Errorf(queue.CodeStoreUnavailable, "the gateway is starting")
	}
	if s.baseCtx.Err() != nil {
		return queue.Errorf(queue.CodeStoreUnavailable, "the gateway is shutting down")
	}
	r := c.Request()
	if err := s.allowOrigin(c); err != nil {
		return err
	}
	id, err := s.resolve(r, c.Param("eventId"))
	if err != nil {
		return err
	}
	t, err := startSSE(c.Response(), s.writers.send)
	if err != nil {
		return nil // the client is gone before the first byte
	}
	cn := s.newConn(id, t)
	cn.resumed = parseAdmittedID(r.Header.Get("Last-Event-ID"))
	s.hub.add(cn)
	defer s.disconnect(cn)
	s.greet(cn)
	select {
	case <-r.Context().Done():
		cn.close(websocket.StatusGoingAway, "client gone")
	case <-s.baseCtx.Done():
		cn.close(httpkit.CloseShuttingDown, "server shutting down")
	case <-t.done: // closed: too slow, or by Run at shutdown
	}
	t.finish(s.cfg.WriteTimeout)
	return nil
}

// allowOrigin applies the socket's origin rule to a browser's request: no
// Origin, the request's own host, or a host matching AllowedOrigins, which
// may then read the stream (CORS); any other origin is refused with 403.
func (s *Server) allowOrigin(c echo.Context) error {
	origin := c.Request().Header.Get("Origin")
	if origin == "" {
		return nil
	}
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, c.Request().Host) {
		return nil
	}
	if !httpkit.OriginAllowed(origin, s.cfg.AllowedOrigins) {
		return queue.Errorf(queue.CodeForbidden, "origin %s is not allowed", origin)
	}
	h := c.Response().Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	return nil
}

// streamPreflight answers a browser's CORS preflight of the stream route
// (an EventSource of another origin that reconnects sends Last-Event-ID,
// which is no CORS-safelisted header): allowed origins may send it.
func (s *Server) streamPreflight(c echo.Context) error {
	if err := s.allowOrigin(c); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderAccessControlAllowMethods, http.MethodGet)
	h.Set(echo.HeaderAccessControlAllowHeaders, "Last-Event-ID")
	h.Set(echo.HeaderAccessControlMaxAge, "600")
	return c.NoContent(http.StatusNoContent)
}

// sseTransport is a conn over a server-sent event stream: the response of
// the request whose goroutine waits in stream.
type sseTransport struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	send func(*conn, frame) // the write workers' door: keep-alives go the frames' way
	done chan struct{}      // closed by close: the handler ends the stream
	once sync.Once

	mu   sync.Mutex // held by a write; the handler takes it to end the stream
	over bool       // the handler is ending the stream: writes fail

	ctl      sync.Mutex // orders deadline changes with the handler's return
	aborted  bool       // a stuck write was failed: the connection must not be reused
	returned bool       // the handler is returning: the ResponseController is off limits
}

// errStreamOver is a write after the handler ended the stream.
var errStreamOver = errors.New("gateway: the stream has ended")

// startSSE answers the stream's head and its retry: field, and returns the
// transport that writes the rest; send is how keep-alives reach the write
// workers. The connection's deadlines are lifted: a stream lives for
// minutes, and the write watchdog bounds each write.
func startSSE(w http.ResponseWriter, send func(*conn, frame)) (*sseTransport, error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, "retry: "+strconv.FormatInt(sseRetry.Milliseconds(), 10)+"\n\n"); err != nil {
		return nil, err
	}
	if err := rc.Flush(); err != nil {
		return nil, err
	}
	return &sseTransport{w: w, rc: rc, send: send, done: make(chan struct{})}, nil
}

// ssePrefix is the head of each kind's event, up to its data.
var ssePrefix = [...]string{
	kindStatus:   "event: status\ndata: ",
	kindAdmitted: "event: admitted\ndata: ",
	kindError:    "event: error\ndata: ",
}

// write sends f as one event (a keep-alive as a comment line) and flushes
// it. The frames' JSON holds no line break, so the data is one line.
func (t *sseTransport) write(f frame) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.over {
		return errStreamOver
	}
	var err error
	if f.kind == kindKeepAlive {
		_, err = io.WriteString(t.w, ":\n\n")
	} else {
		_, err = io.WriteString(t.w, ssePrefix[f.kind])
		if err == nil {
			_, err = t.w.Write(f.data)
		}
		if err == nil && f.id != "" {
			_, err = io.WriteString(t.w, "\nid: "+f.id)
		}
		if err == nil {
			_, err = io.WriteString(t.w, "\n\n")
		}
	}
	if err != nil {
		return err
	}
	return t.rc.Flush()
}

// close wakes the handler, which ends the stream (an SSE stream has no
// close code: the client reconnects after retry:).
func (t *sseTransport) close(websocket.StatusCode, string) {
	t.once.Do(func() { close(t.done) })
}

// abort fails a stuck write at once through the connection's write
// deadline, while the handler has not returned.
func (t *sseTransport) abort() {
	t.ctl.Lock()
	defer t.ctl.Unlock()
	if !t.returned {
		t.aborted = true
		_ = t.rc.SetWriteDeadline(time.Now())
	}
}

// keepAlive hands a comment to the write workers, from a goroutine of its
// own: the caller holds a hub shard's lock and the workers' queue may be
// full. A stream that does not take it in time is aborted by the watchdog
// like any write.
func (t *sseTransport) keepAlive(c *conn, _ time.Duration) {
	go func() {
		t.send(c, frame{kind: kindKeepAlive})
		c.pinging.Store(false)
	}()
}

// finish is the handler's way out, after the conn was closed: a write under
// way ends within timeout (the watchdog stops at shutdown), then no write
// may start. A stream that ended well leaves its connection reusable.
func (t *sseTransport) finish(timeout time.Duration) {
	t.ctl.Lock()
	if !t.aborted {
		_ = t.rc.SetWriteDeadline(time.Now().Add(timeout))
	}
	t.ctl.Unlock()
	t.mu.Lock()
	t.over = true
	t.mu.Unlock()
	t.ctl.Lock()
	defer t.ctl.Unlock()
	if !t.aborted {
		_ = t.rc.SetWriteDeadline(time.Time{})
	}
	t.returned = true
}

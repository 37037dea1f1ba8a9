package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
	tokens "golang.org/x/time/rate"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// identity is who a request speaks for: a user of an existing event.
type identity struct {
	eventID    string
	userID     string
	joinedAtMs int64 // the ticket's join stamp; 0 when unknown (trust mode)
	// returnTo is the page the user came from (?returnTo=), where the
	// admitted frame sends them if it lies under the event's targetUrl.
	returnTo string
}

// resolve checks a socket's or a poll's request: a valid event id, a user
// proven by a ticket (or the X-User-Id header in trust mode), and an event
// that exists. Its errors are domain errors, answered as an HTTP status or
// a close code through httpkit's tables.
func (s *Server) resolve(r *http.Request, eventID string) (identity, error) {
	if err := queue.CheckEventID(eventID); err != nil {
		return identity{}, err
	}
	id, err := s.identify(r, eventID)
	if err != nil {
		return identity{}, err
	}
	_, err = s.events.Event(r.Context(), eventID)
	switch {
	case errors.Is(err, queue.ErrEventNotFound):
		return identity{}, queue.Errorf(queue.CodeEventNotFound, "event %s does not exist", eventID)
	case err != nil:
		return identity{}, httpkit.StoreError(s.log, "look up event "+eventID, err)
	}
	return id, nil
}

// identify returns the user of a request: from its ticket, or from the
// X-User-Id header in trust mode, set by a trusted proxy (from any other
// peer the header is ignored: docs/api.md#conventions).
func (s *Server) identify(r *http.Request, eventID string) (identity, error) {
	if t := r.URL.Query().Get("ticket"); t != "" {
		tk, err := s.tickets.Verify(t, eventID, s.now())
		if err != nil {
			return identity{}, err
		}
		return identity{eventID: eventID, userID: tk.UserID, joinedAtMs: tk.JoinedAt, returnTo: r.URL.Query().Get("returnTo")}, nil
	}
	if s.cfg.TrustUserHeader && s.proxies.PeerTrusted(r) {
		if u := r.Header.Get(httpkit.UserHeader); u != "" {
			if err := queue.CheckNamedUserID(u); err != nil {
				return identity{}, err
			}
			return identity{eventID: eventID, userID: u, returnTo: r.URL.Query().Get("returnTo")}, nil
		}
	}
	if s.cfg.TrustUserHeader {
		return identity{}, queue.Errorf(queue.CodeMissingUserID, "a ticket (?ticket=…) or the %s header from a trusted proxy is required", httpkit.UserHeader)
	}
	return identity{}, queue.Errorf(queue.CodeMissingUserID, "a ticket is required (?ticket=…)")
}

// socket upgrades /queue-status/{eventId} and hands the socket to a reader
// goroutine of its own, the only goroutine a socket keeps: its frames are
// written by the write workers.
func (s *Server) socket(c echo.Context) error {
	select {
	case <-s.ready:
	default:
		return queue.Errorf(queue.CodeStoreUnavailable, "the gateway is starting")
	}
	r := c.Request()
	rec := &hijackRecorder{ResponseWriter: c.Response()}
	// The client's pings draw on the frame budget too: the library answers
	// each with a pong on the reader's goroutine, under the socket's write
	// lock, and nothing else would bound them. A ping past the budget gets no
	// pong and counts a strike, as a data frame would.
	budget := &frameBudget{limit: s.cfg.FrameLimit}
	var cn *conn
	ws, err := websocket.Accept(rec, r, &websocket.AcceptOptions{
		OriginPatterns: s.cfg.AllowedOrigins,
		OnPingReceived: func(context.Context, []byte) bool {
			// Called on the reader's goroutine, inside Read: the budget is
			// the reader's alone.
			return cn == nil || s.takeFrame(cn, budget)
		},
	})
	if err != nil {
		s.metrics.refused.WithLabelValues("handshake").Inc()
		return nil // Accept answered (403 for a foreign origin, 426 for no upgrade)
	}
	if s.baseCtx.Err() != nil {
		s.metrics.refused.WithLabelValues("shutdown").Inc()
		_ = ws.Close(httpkit.CloseShuttingDown, "server shutting down")
		return nil
	}
	id, err := s.resolve(r, c.Param("eventId"))
	if err != nil {
		s.metrics.refused.WithLabelValues(string(queue.ErrorCode(err))).Inc()
		_ = ws.Close(httpkit.CloseCode(err), httpkit.ErrorMessage(err))
		return nil
	}
	cn = s.newConn(id, &wsTransport{ws: ws, raw: rec.conn})
	s.hub.add(cn)
	s.greet(cn)
	// The request's goroutine returns, and with it the stack the HTTP server
	// and the upgrade grew: a socket lives for minutes on a fresh one.
	go func() {
		defer s.disconnect(cn)
		s.readFrames(cn, ws, budget)
	}()
	return nil
}

// newConn returns a conn of id over t, counted as too slow when it closes
// with 1008.
func (s *Server) newConn(id identity, t transport) *conn {
	// The ids are cut from the request's text: copies keep the request from
	// being held for the conn's life.
	id.eventID, id.userID, id.returnTo = strings.Clone(id.eventID), strings.Clone(id.userID), strings.Clone(id.returnTo)
	return &conn{identity: id, t: t, onSlow: s.onSlow, lastPing: time.Now().UnixNano()}
}

// readFrames acts on the frames a client sends until the socket closes. It
// reads with a context that is never done, so a read arms no timer; the
// socket's close ends it.
func (s *Server) readFrames(c *conn, ws *websocket.Conn, budget *frameBudget) {
	ws.SetReadLimit(clientFrameReadLimit)
	for {
		typ, data, err := ws.Read(context.Background())
		if err != nil {
			return // closed by the peer, by us, or over the read limit (1009)
		}
		if !s.takeFrame(c, budget) {
			if budget.strikes >= maxFrameStrikes {
				return
			}
			s.writers.send(c, errorFrame(queue.Errorf(queue.CodeRateLimited,
				"too many frames: at most %g a second (%d at once); this one was not acted on", budget.limit.PerSecond, budget.limit.Burst)))
			continue
		}
		switch kind, perr := parseClientFrame(typ, data); {
		case perr != nil:
			err = perr
		case kind == FrameLeave:
			err = s.leave(s.baseCtx, c)
		default:
			err = s.release(s.baseCtx, c)
		}
		if err != nil {
			s.writers.send(c, errorFrame(err))
		}
	}
}

// takeFrame spends a token of c's frame budget for a client frame (data or
// ping), or counts it refused; the strike that reaches maxFrameStrikes
// closes c with 1008 "too many frames". Called by c's reader only.
func (s *Server) takeFrame(c *conn, budget *frameBudget) bool {
	if budget.take(time.Now()) {
		return true
	}
	s.metrics.framesRefused.Inc()
	if budget.strikes >= maxFrameStrikes {
		c.close(httpkit.CloseTooManyFrames, "too many frames")
	}
	return false
}

// errorFrame is the error frame that answers a client frame with err.
func errorFrame(err error) frame {
	return frame{kind: kindError, data: encode(ErrorFrame{Type: "error", Code: queue.ErrorCode(err), Message: httpkit.ErrorMessage(err)})}
}

// maxFrameStrikes is how many client frames in a row may be refused for
// the frame limit before the socket is closed with 1008: a client that
// ignores its rate_limited error frames is abusing the socket.
const maxFrameStrikes = 10

// frameBudget is one socket's token bucket of client frames (the same
// token bucket as the per-address limits), kept by its reader and made at
// the first frame, so idle sockets cost nothing more.
type frameBudget struct {
	limit   httpkit.RateLimit // zero PerSecond: no limit
	bucket  *tokens.Limiter
	strikes int // frames refused since the last one taken
}

// take spends a token for a frame that arrived at now, or counts a strike.
func (b *frameBudget) take(now time.Time) bool {
	if b.limit.PerSecond <= 0 {
		return true
	}
	if b.bucket == nil {
		b.bucket = tokens.NewLimiter(tokens.Limit(b.limit.PerSecond), max(b.limit.Burst, 1))
	}
	if !b.bucket.AllowN(now, 1) {
		b.strikes++
		return false
	}
	b.strikes = 0
	return true
}

// parseClientFrame returns the type of a client frame, FrameLeave or
// FrameRelease, or an invalid_body error to answer with.
func parseClientFrame(typ websocket.MessageType, data []byte) (string, error) {
	var f ClientFrame
	if typ != websocket.MessageText || json.Unmarshal(data, &f) != nil {
		return "", queue.Errorf(queue.CodeInvalidBody, `frames must be JSON text such as {"type":"leave"}`)
	}
	if f.Type != FrameLeave && f.Type != FrameRelease {
		return "", queue.Errorf(queue.CodeInvalidBody, "unknown frame type %q: use leave or release", f.Type)
	}
	return f.Type, nil
}

// clientFrameReadLimit is the largest frame a client may send; a larger one
// closes the socket with 1009.
const clientFrameReadLimit = 1024

// wsTransport is a conn over a WebSocket.
type wsTransport struct {
	ws *websocket.Conn
	// raw is the connection under ws, closed directly to abort a stuck
	// write: no pending close handshake can hold that up. Nil in tests that
	// make conns by hand.
	raw net.Conn
}

// write sends f as a text message, with a context that is never done:
// coder/websocket then arms nothing for the write (the watchdog bounds it).
func (t *wsTransport) write(f frame) error {
	return t.ws.Write(context.Background(), websocket.MessageText, f.data)
}

// close runs the close handshake in the background.
func (t *wsTransport) close(code websocket.StatusCode, reason string) {
	go func() { _ = t.ws.Close(code, reason) }()
}

func (t *wsTransport) abort() {
	if t.raw != nil {
		_ = t.raw.Close()
	}
}

// keepAlive pings on a goroutine that lives until the pong (or timeout):
// coder/websocket's Ping waits for the pong, which the reader receives. A
// missing pong closes the socket with 1001.
func (t *wsTransport) keepAlive(c *conn, timeout time.Duration) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := t.ws.Ping(ctx)
		cancel()
		c.pinging.Store(false)
		if err != nil {
			c.close(websocket.StatusGoingAway, "no pong")
		}
	}()
}

// Buffer sizes of a hijacked socket, which lives for minutes: net/http's
// 4 KiB read and write buffers would be most of its memory. A status frame
// is ~130 bytes plus its ids and fits the write buffer whole, one system
// call; a frame over it (an admitted frame with its token and redirect, or
// a status of ids near their 64- and 128-character limits) goes out in two.
// Client frames are rare and small (at most clientFrameReadLimit), read in
// pieces of the read buffer.
const (
	socketReadBuffer  = 64
	socketWriteBuffer = 384
)

// hijackRecorder keeps the connection a WebSocket upgrade hijacks, so that
// a stuck write can be aborted by closing it, and hands the WebSocket
// smaller buffers than net/http's.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

// Hijack implements http.Hijacker.
func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("gateway: the response cannot be hijacked")
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = c
	// Bytes the client sent after its request stay first in line, held in
	// the new buffer itself: the WebSocket library keeps what is buffered
	// and points the reader at the connection. The response (101) was
	// flushed before the hijack.
	ahead := bytes.Clone(peekBuffered(brw.Reader))
	if len(ahead) == 0 {
		return c, bufio.NewReadWriter(bufio.NewReaderSize(c, socketReadBuffer), bufio.NewWriterSize(c, socketWriteBuffer)), nil
	}
	r := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(ahead), c), max(socketReadBuffer, len(ahead)))
	if _, err := r.Peek(len(ahead)); err != nil {
		return nil, nil, fmt.Errorf("gateway: carry bytes read ahead: %w", err)
	}
	return c, bufio.NewReadWriter(r, bufio.NewWriterSize(c, socketWriteBuffer)), nil
}

// peekBuffered returns what r holds buffered, without reading more.
func peekBuffered(r *bufio.Reader) []byte {
	b, _ := r.Peek(r.Buffered())
	return b
}

package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/pkg/httpkit"
	"github.com/waitq/waitq/pkg/queue"
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
// X-User-Id header in trust mode.
func (s *Server) identify(r *http.Request, eventID string) (identity, error) {
	if t := r.URL.Query().Get("ticket"); t != "" {
		tk, err := s.tickets.Verify(t, eventID, s.now())
		if err != nil {
			return identity{}, err
		}
		return identity{eventID: eventID, userID: tk.UserID, joinedAtMs: tk.JoinedAt, returnTo: r.URL.Query().Get("returnTo")}, nil
	}
	if s.cfg.TrustUserHeader {
		if u := r.Header.Get(httpkit.UserHeader); u != "" {
			if err := queue.CheckUserID(u); err != nil {
				return identity{}, err
			}
			return identity{eventID: eventID, userID: u, returnTo: r.URL.Query().Get("returnTo")}, nil
		}
	}
	return identity{}, queue.Errorf(queue.CodeMissingUserID, "a ticket is required (?ticket=…)")
}

// socket upgrades /queue-status/{eventId} and hands the socket to a
// goroutine of its own that serves it until it closes.
func (s *Server) socket(c echo.Context) error {
	select {
	case <-s.ready:
	default:
		return queue.Errorf(queue.CodeStoreUnavailable, "the gateway is starting")
	}
	r := c.Request()
	rec := &hijackRecorder{ResponseWriter: c.Response()}
	ws, err := websocket.Accept(rec, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.AllowedOrigins})
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
	cn := newConn(ws, id, s.cfg.SendQueue)
	cn.raw = rec.conn
	cn.onDrop = func(code websocket.StatusCode) {
		if code == httpkit.CloseTooSlow {
			s.metrics.slow.Inc()
		}
	}
	s.hub.add(cn)
	s.greet(cn)
	// The request's goroutine returns, and with it the stack the HTTP server
	// and the upgrade grew: a socket lives for minutes on a fresh one.
	go func() {
		defer s.hub.remove(cn)
		cn.run(context.WithoutCancel(s.baseCtx), s, s.cfg.WriteTimeout, s.cfg.PingInterval)
	}()
	return nil
}

// Buffer sizes of a hijacked socket. Its frames are small (a status frame
// is ~160 bytes, client frames at most clientFrameReadLimit) and it lives for
// minutes, so net/http's 4 KiB read and write buffers would be most of its
// memory; larger frames bypass a bufio buffer anyway.
const (
	socketReadBuffer  = 512
	socketWriteBuffer = 1024
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

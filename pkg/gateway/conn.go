package gateway

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/pkg/httpkit"
	"github.com/waitq/waitq/pkg/queue"
)

// clientFrameReadLimit is the largest frame a client may send; a larger one
// closes the socket with 1009.
const clientFrameReadLimit = 1024

// conn is one WebSocket of one user of one event.
type conn struct {
	ws *websocket.Conn
	identity

	out       chan []byte
	writing   atomic.Int64 // unix ns the write under way began; 0 when none
	admitted  atomic.Bool  // the admitted frame was sent
	placed    atomic.Bool  // the user was seen in line or holding, or left
	closeOnce sync.Once
	cancel    context.CancelFunc
	// raw is the connection under ws, closed directly to abort a stuck
	// write: no pending close handshake can hold that up. Nil in tests that
	// make conns by hand.
	raw    net.Conn
	onDrop func(code websocket.StatusCode)
}

func (c *conn) view() socketView {
	return socketView{admitted: c.admitted.Load(), placed: c.placed.Load(), joinedAtMs: c.joinedAtMs}
}

func newConn(ws *websocket.Conn, id identity, queueLen int) *conn {
	return &conn{ws: ws, identity: id, out: make(chan []byte, queueLen)}
}

// send queues a frame without blocking; a full queue means the reader cannot
// keep up, and the socket is closed with 1008.
func (c *conn) send(frame []byte) bool {
	select {
	case c.out <- frame:
		return true
	default:
		c.abort()
		return false
	}
}

// close ends the socket with code once; the close handshake runs in the
// background so that the caller (a tick) never waits for a slow peer.
func (c *conn) close(code websocket.StatusCode, reason string) {
	c.closeOnce.Do(func() {
		if c.onDrop != nil {
			c.onDrop(code)
		}
		go func() {
			_ = c.ws.Close(code, reason)
			c.cancel()
		}()
	})
}

// stalled reports whether a write has been under way since before cutoff
// (unix ns).
func (c *conn) stalled(cutoff int64) bool {
	w := c.writing.Load()
	return w != 0 && w < cutoff
}

// abort ends a socket that cannot keep up: counted as too slow, its
// connection closed at once, which fails a stuck write (no close frame can
// pass a full send buffer).
func (c *conn) abort() {
	c.close(httpkit.CloseTooSlow, "too slow to read")
	if c.raw != nil {
		_ = c.raw.Close()
	}
}

// clientHandler acts on the frames a client sends.
type clientHandler interface {
	leave(ctx context.Context, c *conn) error
	release(ctx context.Context, c *conn) error
}

// run serves the socket until it closes: frames out through a writer
// goroutine, a ping every pingEvery, client frames in on this goroutine.
// Writes carry no timer of their own: the gateway's write watchdog aborts a
// socket whose write takes longer than the write timeout (see
// Server.watchWrites), so a frame costs no timer and no context.
func (c *conn) run(ctx context.Context, h clientHandler, writeTimeout, pingEvery time.Duration) {
	ctx, c.cancel = context.WithCancel(ctx)
	defer c.cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.writeLoop(ctx, writeTimeout, pingEvery)
	}()
	c.readLoop(ctx, h)
	c.cancel()
	<-done
}

func (c *conn) writeLoop(ctx context.Context, writeTimeout, pingEvery time.Duration) {
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	// A context that is never done: coder/websocket then arms nothing for
	// the write.
	wctx := context.WithoutCancel(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-c.out:
			c.writing.Store(time.Now().UnixNano())
			err := c.ws.Write(wctx, websocket.MessageText, f)
			c.writing.Store(0)
			if err != nil {
				// Aborted by the watchdog, or the peer is gone.
				c.close(httpkit.CloseTooSlow, "too slow to read")
				return
			}
		case <-ping.C:
			pctx, cancel := context.WithTimeout(ctx, writeTimeout)
			err := c.ws.Ping(pctx)
			cancel()
			if err != nil {
				c.close(websocket.StatusGoingAway, "no pong")
				return
			}
		}
	}
}

func (c *conn) readLoop(ctx context.Context, h clientHandler) {
	c.ws.SetReadLimit(clientFrameReadLimit)
	for {
		typ, data, err := c.ws.Read(ctx)
		if err != nil {
			return // closed by the peer, by us, or over the read limit (1009)
		}
		switch kind, perr := parseClientFrame(typ, data); {
		case perr != nil:
			err = perr
		case kind == FrameLeave:
			err = h.leave(ctx, c)
		default:
			err = h.release(ctx, c)
		}
		if err != nil {
			c.send(encode(ErrorFrame{Type: "error", Code: queue.ErrorCode(err), Message: httpkit.ErrorMessage(err)}))
		}
	}
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

// watchdogPeriod is how often stuck writes are looked for: a quarter of the
// write timeout, so a stuck socket is aborted within 1.25 times it.
func watchdogPeriod(writeTimeout time.Duration) time.Duration {
	return max(writeTimeout/4, time.Millisecond)
}

// watchWrites aborts every socket whose write has taken longer than
// WriteTimeout: one goroutine for all sockets in place of a timer per
// write.
func (s *Server) watchWrites(context.Context) {
	// Real time, as the write stamps are: the injected clock is business
	// time and may be pushed forward by tests.
	cutoff := time.Now().Add(-s.cfg.WriteTimeout).UnixNano()
	s.hub.each(func(c *conn) {
		if c.stalled(cutoff) {
			c.abort()
		}
	})
}

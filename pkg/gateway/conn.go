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
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/pkg/queue"
)

// Close codes of the contract.
const (
	CloseInvalidEvent    websocket.StatusCode = 4400
	CloseBadIdentity     websocket.StatusCode = 4401
	CloseUnknownEvent    websocket.StatusCode = 4404
	CloseTooSlow                              = websocket.StatusPolicyViolation // 1008
	CloseShuttingDown                         = websocket.StatusGoingAway       // 1001
	CloseInternal                             = websocket.StatusInternalError   // 1011
	clientFrameReadLimit                      = 1024
)

// conn is one WebSocket of one user of one event.
type conn struct {
	ws         *websocket.Conn
	eventID    string
	userID     string
	joinedAtMs int64 // from the ticket; 0 when unknown

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

func (c *conn) history() history {
	return history{admitted: c.admitted.Load(), placed: c.placed.Load(), joinedAtMs: c.joinedAtMs}
}

func newConn(ws *websocket.Conn, eventID, userID string, joinedAtMs int64, queueLen int) *conn {
	return &conn{ws: ws, eventID: eventID, userID: userID, joinedAtMs: joinedAtMs, out: make(chan []byte, queueLen)}
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
	c.close(CloseTooSlow, "too slow to read")
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
				c.close(CloseTooSlow, "too slow to read")
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
			c.send(encode(ErrorFrame{Type: "error", Code: queue.ErrorCode(err), Message: errorMessage(err)}))
		}
	}
}

// errorMessage is the text of a domain error; other errors stay private.
func errorMessage(err error) string {
	var e *queue.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
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

package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/httpkit"
)

// conn is one live subscription of one user of one event: a WebSocket or an
// SSE stream. It has no goroutine and no queue of its own: the gateway's
// write workers write its frames (see writers), and a frame that arrives
// while another is being written waits in pending, which is nil when idle.
type conn struct {
	identity
	t transport

	writing  atomic.Int64 // unix ns the write under way began; 0 when none
	admitted atomic.Bool  // the admitted frame was sent (notifyAdmitted, admitted.go)
	// admittedAt is when (unix ms, the gateway's clock), set before
	// admitted: a status read begun before it may predate the admission.
	admittedAt atomic.Int64
	placed     atomic.Bool // the user was seen in line or holding, or left
	pinging    atomic.Bool // a keep-alive is under way
	lastPing   int64       // unix ns of the last keep-alive; the status loop's alone
	// resumed is the stay end of the admission an SSE client says it
	// received (Last-Event-ID): while it is the user's stay, the conn counts
	// as admitted without a second token. 0: none. Set before the conn is
	// in the hub.
	resumed int64

	mu      sync.Mutex
	busy    bool    // a worker is writing this conn's frames
	ended   bool    // closed: frames are discarded
	pending []frame // frames that came while busy, oldest first

	closeOnce sync.Once
	onSlow    func() // counts a conn closed as too slow; shared by a server's conns
}

// transport is the wire under a conn. write is called by one goroutine at a
// time and may block (the write watchdog aborts it); close ends the stream
// gracefully in the background; abort ends it at once, failing a stuck
// write; keepAlive proves the peer is there, without blocking the caller.
type transport interface {
	write(f frame) error
	close(code websocket.StatusCode, reason string)
	abort()
	keepAlive(c *conn, timeout time.Duration)
}

// frameKind names a frame for transports that label them (SSE's event:).
type frameKind uint8

// The kinds of frames.
const (
	kindStatus frameKind = iota
	kindAdmitted
	kindError
	// kindKeepAlive is no frame of the contract: a transport's keep-alive
	// that goes the frames' way (SSE writes it as a comment line).
	kindKeepAlive
)

// frame is one encoded frame and its kind. id is its SSE event id (empty:
// none).
type frame struct {
	kind frameKind
	data []byte
	id   string
}

func (c *conn) view() socketView {
	// admitted first: admittedAt is set before it, so a flag seen set has
	// its time seen too (read the other way round, a notifyAdmitted between
	// the two loads gave the flag with time 0: "expired" for a read that
	// predates the admission).
	admitted := c.admitted.Load()
	return socketView{admitted: admitted, admittedAtMs: c.admittedAt.Load(), placed: c.placed.Load(), joinedAtMs: c.joinedAtMs}
}

// offer writes f now on the caller's goroutine, then any frames that came
// meanwhile; when a write is already under way it queues f (copied: the
// caller may reuse its buffer) and returns at once. More than maxPending
// frames waiting mean the peer cannot keep up: the conn is aborted as too
// slow. It reports whether f was written or queued.
func (c *conn) offer(f frame, maxPending int) bool {
	c.mu.Lock()
	switch {
	case c.ended:
		c.mu.Unlock()
		return false
	case c.busy:
		if len(c.pending) >= maxPending {
			c.mu.Unlock()
			c.abort()
			return false
		}
		f.data = append([]byte(nil), f.data...)
		c.pending = append(c.pending, f)
		c.mu.Unlock()
		return true
	}
	c.busy = true
	c.mu.Unlock()
	for {
		c.writing.Store(time.Now().UnixNano())
		err := c.t.write(f)
		c.writing.Store(0)
		if err != nil {
			// Aborted by the watchdog, or the peer is gone.
			c.end(httpkit.CloseTooSlow, "too slow to read", true)
		}
		c.mu.Lock()
		if err != nil || len(c.pending) == 0 || c.ended {
			c.busy, c.pending = false, nil
			c.mu.Unlock()
			return true
		}
		f = c.pending[0]
		c.pending = c.pending[1:]
		c.mu.Unlock()
	}
}

// close ends the conn with code once; the transport's close runs in the
// background so that the caller (a status round, a monitor tick) never waits for a slow peer.
func (c *conn) close(code websocket.StatusCode, reason string) { c.end(code, reason, false) }

// end closes the conn once, counted as too slow when slow is set.
func (c *conn) end(code websocket.StatusCode, reason string, slow bool) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.ended, c.pending = true, nil
		c.mu.Unlock()
		if slow && c.onSlow != nil {
			c.onSlow()
		}
		c.t.close(code, reason)
	})
}

// stalled reports whether a write has been under way since before cutoff
// (unix ns).
func (c *conn) stalled(cutoff int64) bool {
	w := c.writing.Load()
	return w != 0 && w < cutoff
}

// abort ends a conn that cannot keep up: counted as too slow, its
// connection closed at once, which fails a stuck write (no close frame can
// pass a full send buffer).
func (c *conn) abort() {
	c.end(httpkit.CloseTooSlow, "too slow to read", true)
	c.t.abort()
}

// keepAliveDue starts a keep-alive when the last one is at least every ago
// and none is under way. Called by the status loop only.
func (c *conn) keepAliveDue(now int64, every, timeout time.Duration) {
	if now-c.lastPing < every.Nanoseconds() || !c.pinging.CompareAndSwap(false, true) {
		return
	}
	c.lastPing = now
	c.t.keepAlive(c, timeout)
}

// clientHandler acts on the frames a client sends.
type clientHandler interface {
	leave(ctx context.Context, c *conn) error
	release(ctx context.Context, c *conn) error
}

// watchdogPeriod is how often stuck writes are looked for: a quarter of the
// write timeout, so a stuck socket is aborted within 1.25 times it.
func watchdogPeriod(writeTimeout time.Duration) time.Duration {
	return max(writeTimeout/4, time.Millisecond)
}

// watchWrites aborts every conn whose write has taken longer than
// WriteTimeout: one goroutine for all conns in place of a timer per write.
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

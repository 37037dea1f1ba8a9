package gateway

import (
	"context"
	"runtime"
	"sync"
)

// writers are the gateway's write workers: every frame to every conn is
// written by one of them, so a conn costs no goroutine for writing and no
// queue. A worker encodes a status frame into a buffer of its own and
// writes it through the conn (conn.offer); a write that blocks holds its
// worker until the write watchdog aborts it, and the other workers go on
// with the other conns. A conn whose write is under way queues its next
// frames without holding a worker.
type writers struct {
	jobs       chan writeJob
	done       <-chan struct{} // closed when the workers stop; nil before run
	maxPending int
	sent       func() // counts a frame written or queued
	wg         sync.WaitGroup
}

// writeJob is one frame for one conn: a status to encode (f.data nil, kind
// status) or an encoded frame.
type writeJob struct {
	c      *conn
	f      frame
	status StatusFrame
}

// writeWorkers is how many frames may be written at once: enough that a
// few stuck writes (each held until the watchdog aborts it) leave the rest
// flowing, few enough that their stacks stay a rounding error.
func writeWorkers() int { return max(32, 8*runtime.GOMAXPROCS(0)) }

// newWriters returns a pool whose conns may have maxPending frames waiting;
// start it with run.
func newWriters(maxPending int, sent func()) *writers {
	return &writers{jobs: make(chan writeJob, 1024), maxPending: maxPending, sent: sent}
}

// run starts the workers; they stop when ctx ends, after the frames
// already handed over.
func (w *writers) run(ctx context.Context) {
	w.done = ctx.Done()
	for range writeWorkers() {
		w.wg.Go(func() { w.work(ctx) })
	}
}

func (w *writers) work(ctx context.Context) {
	var buf []byte
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-w.jobs:
			if j.f.data == nil && j.f.kind == kindStatus {
				buf = appendStatus(buf[:0], &j.status)
				j.f.data = buf
			}
			if j.c.offer(j.f, w.maxPending) && w.sent != nil && j.f.kind != kindKeepAlive {
				w.sent()
			}
		}
	}
}

// status hands c its status frame f, encoded by a worker.
func (w *writers) status(c *conn, f *StatusFrame) { w.hand(writeJob{c: c, status: *f}) }

// send hands c an encoded frame.
func (w *writers) send(c *conn, f frame) { w.hand(writeJob{c: c, f: f}) }

// hand waits for room among the jobs (the workers' pace is the only
// backpressure), or discards j once the workers have stopped.
func (w *writers) hand(j writeJob) {
	select {
	case w.jobs <- j:
	case <-w.done:
	}
}

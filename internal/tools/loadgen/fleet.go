package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/testkit/testclient"
	"github.com/waitq/waitq/internal/tools/loadgen/latency"
)

// fleet is every client of a run. Each client has one reader goroutine;
// counters are shared atomics, so memory per client stays a few hundred
// bytes beyond the connection itself.
type fleet struct {
	ctx     context.Context // readers run until it ends
	cancel  context.CancelFunc
	clients []*wsClient // by user index; nil where the dial failed
	readers sync.WaitGroup

	lat       latency.Hist
	winStart  atomic.Int64 // window of server stamps (ms); set before winEnd
	winEnd    atomic.Int64
	frozen    atomic.Bool  // frames arriving after the window's grace do not count
	probe     atomic.Bool  // the first connected client watches the tick phase
	probeTick atomic.Int64 // server stamp of the probe's latest regular tick
	// phases marks where in the status interval regular frames are stamped
	// (interval/phaseBuckets apart), so that the window's edges can fall
	// where no frame is: a gateway spreads its statuses over part of the
	// interval.
	phases     [phaseBuckets]atomic.Bool
	intervalMs atomic.Int64 // the gateway's status interval; 0 until known
	status     atomic.Int64 // status frames received in all
	other      atomic.Int64 // frames of other types
	connected  atomic.Int64
	failed     atomic.Int64
	streak     atomic.Int64 // failed dials since the last success
	dropped    atomic.Int64 // sockets that ended while loadgen still read

	errMu sync.Mutex
	errs  tally // by "dial <class>" / "drop <class>"
}

// newFleet returns an empty fleet for n clients whose readers end with
// parent or close.
func newFleet(parent context.Context, n int) *fleet {
	ctx, cancel := context.WithCancel(parent)
	return &fleet{ctx: ctx, cancel: cancel, clients: make([]*wsClient, n), errs: newTally()}
}

// noteError counts err under class and keeps the first example.
func (f *fleet) noteError(class string, err error) {
	f.errMu.Lock()
	defer f.errMu.Unlock()
	f.errs.add(class, quotedURL.ReplaceAllLiteralString(err.Error(), `"<url>"`))
}

// quotedURL is a quoted URL in an error message, whose ticket would push
// the cause out of the table's line: redacted to "<url>".
var quotedURL = regexp.MustCompile(`"http://[^"]*"`)

// statusFrameHead is the part of a status frame the clients look at.
type statusFrameHead struct {
	Type string `json:"type"`
	TS   int64  `json:"ts"`
}

// read receives c's frames until its connection ends or the fleet closes.
// Status frames stamped inside the window count for c and the latency
// histogram.
func (f *fleet) read(c *wsClient, probe bool, connectedMs int64) {
	for {
		data, err := c.conn.next(f.ctx)
		if err != nil {
			if f.ctx.Err() == nil {
				f.dropped.Add(1)
				f.noteError("drop "+dropClass(err), err)
			}
			return
		}
		arrivedUs := time.Now().UnixMicro()
		var h statusFrameHead
		if data == nil || json.Unmarshal(data, &h) != nil || h.Type != "status" {
			f.other.Add(1)
			continue
		}
		f.status.Add(1)
		// The probe's greeting arrives within milliseconds of its connect;
		// what comes later is a regular tick, which fixes the tick phase.
		if h.TS >= connectedMs+probeSettle {
			if probe {
				f.probeTick.Store(h.TS)
			}
			if iv := f.intervalMs.Load(); iv > 0 {
				f.phases[(h.TS%iv)*phaseBuckets/iv].Store(true)
			}
		}
		end := f.winEnd.Load()
		if end == 0 || f.frozen.Load() || h.TS < f.winStart.Load() || h.TS >= end {
			continue
		}
		c.inWindow.Add(1)
		f.lat.Record(arrivedUs - h.TS*1000)
	}
}

// dropClass names the way a socket ended: its close code, or the kind of
// error (testclient.ErrorKind).
func dropClass(err error) string {
	if code := websocket.CloseStatus(err); code != -1 {
		return "close " + strconv.Itoa(int(code))
	}
	return testclient.ErrorKind(err)
}

// close closes every client socket without a close handshake and waits a
// bounded time for the readers.
func (f *fleet) close(stderr io.Writer) {
	f.cancel()
	for _, c := range f.clients {
		if c != nil {
			c.conn.closeNow()
		}
	}
	done := make(chan struct{})
	go func() {
		f.readers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(readersStopWait):
		fmt.Fprintf(stderr, "loadgen: client readers did not stop within %s\n", readersStopWait)
	}
}

// phaseBuckets is how finely phases records the status interval.
const phaseBuckets = 200

// quietPhase returns the middle (ms into the interval) of the longest run
// of the interval in which no regular frame was stamped since phases was
// last cleared, and that run's length in ms; ok is false when no frame was
// seen or every bucket saw one.
func (f *fleet) quietPhase() (phase, length int64, ok bool) {
	iv := f.intervalMs.Load()
	seen := 0
	for i := range f.phases {
		if f.phases[i].Load() {
			seen++
		}
	}
	if iv <= 0 || seen == 0 || seen == phaseBuckets {
		return 0, 0, false
	}
	bestStart, bestLen := 0, 0
	for i := range phaseBuckets {
		if f.phases[i].Load() || !f.phases[(i+phaseBuckets-1)%phaseBuckets].Load() {
			continue // not the start of a quiet run
		}
		n := 0
		for n < phaseBuckets && !f.phases[(i+n)%phaseBuckets].Load() {
			n++
		}
		if n > bestLen {
			bestStart, bestLen = i, n
		}
	}
	mid := (float64(bestStart) + float64(bestLen)/2) * float64(iv) / phaseBuckets
	return int64(mid) % iv, int64(bestLen) * iv / phaseBuckets, true
}

// clearPhases forgets the phases seen so far.
func (f *fleet) clearPhases() {
	for i := range f.phases {
		f.phases[i].Store(false)
	}
}

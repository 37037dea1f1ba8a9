package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sync/errgroup"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/stack/svcproc"
	"github.com/waitq/waitq/internal/testkit/sse"
	"github.com/waitq/waitq/internal/testkit/testclient"
	"github.com/waitq/waitq/internal/tools/loadgen/latency"
)

// fleet is every client of a run against one gateway. Each client has one
// reader goroutine; counters are shared atomics, so memory per client stays
// a few hundred bytes beyond the connection itself.
type fleet struct {
	ctx     context.Context // the clients' connections and readers live until it ends
	cancel  context.CancelFunc
	cfg     socketsConfig
	gw      *svcproc.Proc
	signer  *queue.TicketSigner
	clients []*client // by user index; nil where the dial failed
	readers sync.WaitGroup

	// How dialing went, set by dialAll.
	dialTime time.Duration
	stopped  string // why dialing ended before every client was tried

	lat      latency.Hist
	winStart atomic.Int64 // window of server stamps (ms); set before winEnd
	winEnd   atomic.Int64 // 0 before the window and after its grace: frames then do not count
	lastTick atomic.Int64 // server stamp of the latest regular tick a client saw
	// phases marks where in the status interval regular frames are stamped
	// (interval/phaseBuckets apart), so that the window's edges can fall
	// where no frame is: a gateway spreads its statuses over part of the
	// interval.
	phases    [phaseBuckets]atomic.Bool
	status    atomic.Int64 // status frames received in all
	other     atomic.Int64 // frames of other types
	connected atomic.Int64
	failed    atomic.Int64
	streak    atomic.Int64 // failed dials since the last success
	dropped   atomic.Int64 // clients that ended while loadgen still read

	errMu sync.Mutex
	errs  tally // by "dial <class>" / "drop <class>"
}

// client is one connected client and what it received in the window.
type client struct {
	next     func() ([]byte, error) // the next frame's data
	closeNow func() error           // ends the connection without a goodbye
	inWindow atomic.Int32
}

// newFleet returns an empty fleet for cfg.n clients of gw whose readers end
// with parent or close.
func newFleet(parent context.Context, cfg socketsConfig, gw *svcproc.Proc, signer *queue.TicketSigner) *fleet {
	ctx, cancel := context.WithCancel(parent)
	return &fleet{ctx: ctx, cancel: cancel, cfg: cfg, gw: gw, signer: signer, clients: make([]*client, cfg.n), errs: newTally()}
}

// dialAll connects the clients, cfg.dialConcurrency at a time, each from
// one of the loopback source addresses in turn, and starts their readers.
// It stops early when the fleet's context ends, maxDialPhase passes, the
// gateway exits or so many dials failed in a row that the rest would fail
// too (a file limit reached: without this, every further dial into a
// gateway out of descriptors would wait for its timeout).
func (f *fleet) dialAll(stderr io.Writer) {
	release := reserveFDs(reservedFDs)
	defer release()
	maxStreak := int64(max(minFailStreak, 2*f.cfg.dialConcurrency))
	clients := sourceClients()
	var g errgroup.Group
	g.SetLimit(f.cfg.dialConcurrency)
	start := time.Now()
	stopProgress := startProgressLine(stderr, func() string {
		return fmt.Sprintf("  connect %6.1fs  connected %d/%d  failed %d  status frames %d",
			time.Since(start).Seconds(), f.connected.Load(), f.cfg.n, f.failed.Load(), f.status.Load())
	})
	for i := 0; i < f.cfg.n && f.ctx.Err() == nil; i++ {
		switch {
		case time.Since(start) > maxDialPhase:
			f.stopped = fmt.Sprintf("%s passed", maxDialPhase)
		case !f.gw.Running():
			f.stopped = "ws-gateway exited"
		case f.streak.Load() >= maxStreak:
			f.stopped = fmt.Sprintf("%d dials failed in a row", f.streak.Load())
		}
		if f.stopped != "" {
			break
		}
		g.Go(func() error {
			f.dialOne(i, clients[i%len(clients)])
			return nil
		})
	}
	_ = g.Wait()
	stopProgress()
	f.dialTime = time.Since(start)
}

// reserveFDs holds n descriptors open until release is called, so that the
// measurement still has some when the dials used up the file limit.
func reserveFDs(n int) (release func()) {
	var files []*os.File
	for range n {
		if f, err := os.Open(os.DevNull); err == nil {
			files = append(files, f)
		}
	}
	return func() {
		for _, f := range files {
			f.Close()
		}
	}
}

// sourceClients returns one HTTP client per loopback source address, so that
// the sockets are not limited to one address's ephemeral ports.
func sourceClients() []*http.Client {
	out := make([]*http.Client, 0, lastSourceHost-firstSourceHost+1)
	for host := firstSourceHost; host <= lastSourceHost; host++ {
		d := &net.Dialer{Timeout: dialTimeout, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(host))}}
		out = append(out, &http.Client{Transport: &http.Transport{
			DialContext:           d.DialContext,
			DisableCompression:    true,
			DisableKeepAlives:     true,
			ResponseHeaderTimeout: dialTimeout, // an SSE stream's request, whose body lives on
		}})
	}
	return out
}

// dialOne connects user i with a fresh ticket through hc and starts its
// reader.
func (f *fleet) dialOne(i int, hc *http.Client) {
	user, ev := socketUser(i, f.cfg.events)
	now := time.Now()
	ticket := f.signer.Sign(queue.Ticket{EventID: ev, UserID: user, JoinedAt: now.UnixMilli(), Expires: now.Add(ticketLifetime).UnixMilli()})
	dial := f.dialWS
	if f.cfg.transport == "sse" {
		dial = f.dialSSE
	}
	c, resp, err := dial(url.PathEscape(ev), "?ticket="+url.QueryEscape(ticket), hc)
	if err != nil {
		if f.ctx.Err() == nil {
			f.failed.Add(1)
			f.streak.Add(1)
			f.noteError("dial", err, resp)
		}
		return
	}
	f.clients[i] = c
	f.connected.Add(1)
	f.streak.Store(0)
	connectedMs := time.Now().UnixMilli()
	f.readers.Go(func() { f.read(c, connectedMs) })
}

// dialWS opens the WebSocket /queue-status/<ev><query> within dialTimeout;
// resp is the handshake's answer when there was one.
func (f *fleet) dialWS(ev, query string, hc *http.Client) (*client, *http.Response, error) {
	ctx, cancel := context.WithTimeout(f.ctx, dialTimeout)
	defer cancel()
	u := "ws" + strings.TrimPrefix(f.gw.URL(), "http") + "/queue-status/" + ev + query
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: hc, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil, resp, err
	}
	return &client{closeNow: ws.CloseNow, next: func() ([]byte, error) {
		_, data, err := ws.Read(f.ctx)
		return data, err
	}}, nil, nil
}

// dialSSE opens the event stream /v1/events/<ev>/stream<query> under the
// fleet's context; hc's dialer and response-header timeout bound the
// handshake.
func (f *fleet) dialSSE(ev, query string, hc *http.Client) (*client, *http.Response, error) {
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, f.gw.URL()+"/v1/events/"+ev+"/stream"+query, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, resp, fmt.Errorf("stream answered %s", resp.Status)
	}
	r := sse.NewReader(resp.Body, sseReadBuffer)
	return &client{closeNow: resp.Body.Close, next: func() ([]byte, error) {
		ev, err := r.Next()
		return ev.Data, err
	}}, nil, nil
}

// noteError counts err under what ("dial", "drop") and its class: the
// status the handshake was answered (resp), the socket's close code, or the
// kind of error (testclient.ErrorKind). The first example of each is kept.
func (f *fleet) noteError(what string, err error, resp *http.Response) {
	class := testclient.ErrorKind(err)
	if resp != nil {
		class = "status " + strconv.Itoa(resp.StatusCode)
	} else if code := websocket.CloseStatus(err); code != -1 {
		class = "close " + strconv.Itoa(int(code))
	}
	f.errMu.Lock()
	defer f.errMu.Unlock()
	f.errs.add(what+" "+class, quotedURL.ReplaceAllLiteralString(err.Error(), `"<url>"`))
}

// quotedURL is a quoted URL in an error message, whose ticket would push
// the cause out of the table's line: redacted to "<url>".
var quotedURL = regexp.MustCompile(`"http://[^"]*"`)

// read receives c's frames until its connection ends or the fleet closes.
// Status frames stamped inside the window count for c and the latency
// histogram.
func (f *fleet) read(c *client, connectedMs int64) {
	iv := f.cfg.interval.Milliseconds()
	for {
		data, err := c.next()
		if err != nil {
			if f.ctx.Err() == nil {
				f.dropped.Add(1)
				f.noteError("drop", err, nil)
			}
			return
		}
		arrivedUs := time.Now().UnixMicro()
		var h struct { // the part of a status frame the clients look at
			Type string `json:"type"`
			TS   int64  `json:"ts"`
		}
		if json.Unmarshal(data, &h) != nil || h.Type != "status" {
			f.other.Add(1)
			continue
		}
		f.status.Add(1)
		// A client's greeting arrives within milliseconds of its connect;
		// what comes later is a regular tick, which shows the tick phase.
		if h.TS >= connectedMs+tickSettle {
			f.lastTick.Store(h.TS)
			f.phases[(h.TS%iv)*phaseBuckets/iv].Store(true)
		}
		end := f.winEnd.Load()
		if end == 0 || h.TS < f.winStart.Load() || h.TS >= end {
			continue
		}
		c.inWindow.Add(1)
		f.lat.Record(arrivedUs - h.TS*1000)
	}
}

// close closes every client without a close handshake, which ends its
// reader's read, and waits for the readers.
func (f *fleet) close() {
	f.cancel()
	for _, c := range f.clients {
		if c != nil {
			_ = c.closeNow()
		}
	}
	f.readers.Wait()
}

// phaseBuckets is how finely phases records the status interval.
const phaseBuckets = 200

// quietPhase returns the middle (ms into the interval) of the longest run
// of the interval in which no regular frame was stamped since phases was
// last cleared, and that run's length in ms; ok is false when no frame was
// seen or every bucket saw one.
func (f *fleet) quietPhase() (phase, length int64, ok bool) {
	run, bestEnd, bestLen := 0, 0, 0
	for i := range 2 * phaseBuckets { // twice round, for the run that wraps past the interval's end
		if f.phases[i%phaseBuckets].Load() {
			run = 0
		} else if run++; run > bestLen && run <= phaseBuckets {
			bestEnd, bestLen = i, run
		}
	}
	if bestLen == 0 || bestLen == phaseBuckets {
		return 0, 0, false
	}
	iv := f.cfg.interval.Milliseconds()
	mid := (float64(bestEnd-bestLen+1) + float64(bestLen)/2) * float64(iv) / phaseBuckets
	return int64(mid) % iv, int64(bestLen) * iv / phaseBuckets, true
}

// clearPhases forgets the phases seen so far.
func (f *fleet) clearPhases() {
	for i := range f.phases {
		f.phases[i].Store(false)
	}
}

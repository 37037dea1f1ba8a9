package loadgen

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/stack/svcproc"
	"github.com/waitq/waitq/internal/testkit/sse"
	"github.com/waitq/waitq/internal/testkit/testclient"
)

// wsClient is one connected client and what it received in the window.
type wsClient struct {
	conn     clientConn
	inWindow atomic.Int32
}

// clientConn is how a client hears: a WebSocket or an SSE stream.
type clientConn interface {
	// next returns the next frame's JSON; nil for a frame that is not text.
	next(ctx context.Context) ([]byte, error)
	// closeNow ends the connection without a goodbye.
	closeNow()
}

// wsConn is a client over a WebSocket.
type wsConn struct{ ws *websocket.Conn }

func (c wsConn) next(ctx context.Context) ([]byte, error) {
	typ, data, err := c.ws.Read(ctx)
	if err != nil || typ != websocket.MessageText {
		return nil, err
	}
	return data, nil
}

func (c wsConn) closeNow() { _ = c.ws.CloseNow() }

// sseConn is a client over the stream route: its request lives under the
// fleet's context.
type sseConn struct {
	body io.ReadCloser
	r    *sse.Reader
}

func (c *sseConn) next(context.Context) ([]byte, error) {
	ev, err := c.r.Next()
	return ev.Data, err
}

func (c *sseConn) closeNow() { _ = c.body.Close() }

// dialResult is what connecting the clients took.
type dialResult struct {
	elapsed   time.Duration
	connected int
	failed    int
	attempted int
	stopped   string // why dialing ended before every client was tried
}

// dialAll connects the clients of cfg, cfg.dialConcurrency at a time, each
// from one of the loopback source addresses in turn, and starts their
// readers. It stops early when ctx ends, maxDialPhase passes, the gateway
// exits or so many dials failed in a row that the rest would fail too (a
// file limit reached: without this, every further dial into a gateway out of
// descriptors would wait for its timeout).
func (f *fleet) dialAll(ctx context.Context, cfg socketsConfig, gw *svcproc.Proc, events []string, signer *queue.TicketSigner, stderr io.Writer) dialResult {
	release := reserveFDs(reservedFDs)
	defer release()
	maxStreak := int64(max(minFailStreak, 2*cfg.dialConcurrency))
	clients := sourceClients()
	sem := make(chan struct{}, cfg.dialConcurrency)
	var wg sync.WaitGroup
	start := time.Now()
	stopProgress := startProgressLine(stderr, func() string {
		return fmt.Sprintf("  connect %6.1fs  connected %d/%d  failed %d  status frames %d",
			time.Since(start).Seconds(), f.connected.Load(), cfg.n, f.failed.Load(), f.status.Load())
	})
	attempted, stopped := 0, ""
dial:
	for i := range cfg.n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break dial
		}
		switch {
		case time.Since(start) > maxDialPhase:
			stopped = fmt.Sprintf("%s passed", maxDialPhase)
		case !gw.Running():
			stopped = "ws-gateway exited"
		case f.streak.Load() >= maxStreak:
			stopped = fmt.Sprintf("%d dials failed in a row", f.streak.Load())
		}
		if stopped != "" {
			<-sem
			break
		}
		attempted++
		wg.Go(func() {
			defer func() { <-sem }()
			f.dialOne(ctx, i, cfg.transport, gw.URL(), events, signer, clients[i%len(clients)])
		})
	}
	wg.Wait()
	stopProgress()
	if stopped != "" {
		fmt.Fprintf(stderr, "loadgen: stopped dialing after %d of %d clients: %s\n", attempted, cfg.n, stopped)
	}
	for _, c := range clients {
		c.CloseIdleConnections()
	}
	return dialResult{elapsed: time.Since(start), connected: int(f.connected.Load()), failed: int(f.failed.Load()), attempted: attempted, stopped: stopped}
}

// reserveFDs holds n descriptors open until release is called, so that the
// measurement still has some when the dials used up the file limit.
func reserveFDs(n int) (release func()) {
	files := make([]*os.File, 0, n)
	for range n {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		files = append(files, f)
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
		tr := &http.Transport{
			Proxy:                 nil,
			DialContext:           d.DialContext,
			DisableCompression:    true,
			DisableKeepAlives:     true,
			ForceAttemptHTTP2:     false,
			ResponseHeaderTimeout: dialTimeout, // an SSE stream's request, whose body lives on
		}
		out = append(out, &http.Client{Transport: tr})
	}
	return out
}

// dialOne connects user i with a fresh ticket over transport to the
// gateway at base (http://…) and starts its reader.
func (f *fleet) dialOne(ctx context.Context, i int, transport, base string, events []string, signer *queue.TicketSigner, hc *http.Client) {
	user, ev := socketUser(i, events)
	now := time.Now()
	ticket := signer.Sign(queue.Ticket{EventID: ev, UserID: user, JoinedAt: now.UnixMilli(), Expires: now.Add(ticketLifetime).UnixMilli()})
	var conn clientConn
	var resp *http.Response
	var err error
	if transport == transportSSE {
		conn, resp, err = f.dialSSE(base+"/v1/events/"+url.PathEscape(ev)+"/stream?ticket="+url.QueryEscape(ticket), hc)
	} else {
		conn, resp, err = dialWS(ctx, "ws"+strings.TrimPrefix(base, "http")+"/queue-status/"+url.PathEscape(ev)+"?ticket="+url.QueryEscape(ticket), hc)
	}
	if err != nil {
		if ctx.Err() == nil {
			f.failed.Add(1)
			f.streak.Add(1)
			f.noteError("dial "+dialErrorClass(err, resp), err)
		}
		return
	}
	c := &wsClient{conn: conn}
	f.clients[i] = c
	f.connected.Add(1)
	f.streak.Store(0)
	probe := f.probe.CompareAndSwap(false, true)
	connectedMs := time.Now().UnixMilli()
	f.readers.Go(func() { f.read(c, probe, connectedMs) })
}

// dialWS opens a WebSocket at u within dialTimeout.
func dialWS(ctx context.Context, u string, hc *http.Client) (clientConn, *http.Response, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: hc, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(clientReadLimit)
	return wsConn{ws}, resp, nil
}

// dialSSE opens the event stream at u under the fleet's context; the
// client's dialer and response-header timeout bound the handshake.
func (f *fleet) dialSSE(u string, hc *http.Client) (clientConn, *http.Response, error) {
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, u, nil)
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
	return &sseConn{body: resp.Body, r: sse.NewReader(resp.Body, sseReadBuffer)}, resp, nil
}

// dialErrorClass names the kind of a failed handshake: the status it was
// answered, or the kind of error (testclient.ErrorKind).
func dialErrorClass(err error, resp *http.Response) string {
	if resp != nil {
		return "status " + strconv.Itoa(resp.StatusCode)
	}
	return testclient.ErrorKind(err)
}

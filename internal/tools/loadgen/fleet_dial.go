package loadgen

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sync/errgroup"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/sse"
)

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

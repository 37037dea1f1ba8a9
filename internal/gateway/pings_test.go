package gateway_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// rawSocket is a WebSocket client by hand, so a test can send control
// frames the way an abusive client would: pings as fast as it likes, never
// reading the pongs.
type rawSocket struct {
	c net.Conn
	r *bufio.Reader
}

// dialRaw opens a WebSocket to path over d, reading the 101 itself.
func dialRaw(t *testing.T, d *net.Dialer, e *gwEnv, path string) *rawSocket {
	t.Helper()
	host := strings.TrimPrefix(e.srv.URL, "http://")
	c, err := d.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", path, host)
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	return &rawSocket{c: c, r: r}
}

// ping writes one masked ping frame with n bytes of payload (at most 125).
func (s *rawSocket) ping(n int) error {
	f := make([]byte, 6+n)
	f[0], f[1] = 0x89, 0x80|byte(n)
	_, _ = rand.Read(f[2:6]) // the mask; the payload is zeros, masked
	copy(f[6:], f[2:6])
	_, err := s.c.Write(f)
	return err
}

// next reads one server frame: its opcode and payload.
func (s *rawSocket) next() (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(s.r, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(s.r, b[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(s.r, b[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	p := make([]byte, n)
	_, err := io.ReadFull(s.r, p)
	return h[0] & 0x0f, p, err
}

// TestClientPingsDrawOnTheFrameBudget: a client's pings count against its
// socket's frame budget like its data frames: past the budget a ping gets no
// pong, and a flood of them closes the socket with 1008 "too many frames"
// (the library answers pings on its own, so nothing else would bound them).
// A client pinging within the budget gets its pongs.
func TestClientPingsDrawOnTheFrameBudget(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	cfg := slow
	cfg.FrameLimit = httpkit.RateLimit{PerSecond: 4, Burst: 2}
	e := startGateway(t, sys, cfg, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)

	s := dialRaw(t, &net.Dialer{}, e, "/queue-status/"+ev+"?ticket="+e.ticket(ev, "flooder"))
	for range 30 {
		if err := s.ping(0); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	pongs := 0
	for {
		op, p, err := s.next()
		if err != nil {
			t.Fatalf("after %d pongs: %v, want a close frame", pongs, err)
		}
		if op == 0xA {
			pongs++
			continue
		}
		if op != 0x8 {
			continue // the greeting's status frame
		}
		if len(p) < 2 || websocket.StatusCode(binary.BigEndian.Uint16(p)) != httpkit.CloseTooManyFrames || string(p[2:]) != "too many frames" {
			t.Fatalf("closed with %q, want 1008 too many frames", p)
		}
		break
	}
	if pongs > 4 {
		t.Errorf("30 pings at once got %d pongs, want at most the burst of 2 and a refill", pongs)
	}
	if got := metricValue(t, e, "waitq_ws_client_frames_refused_total"); got < 10 {
		t.Errorf("frames refused: %v, want at least 10", got)
	}

	// A client that pings now and then is answered.
	ws, _, err := websocket.Dial(t.Context(), e.wsURL("/queue-status/"+ev+"?ticket="+e.ticket(ev, "polite")), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.CloseRead(t.Context()) // reads (and drops) the frames, so pongs arrive
	for range 2 {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err := ws.Ping(ctx)
		cancel()
		if err != nil {
			t.Fatalf("a polite ping: %v", err)
		}
	}
}

// TestPingFloodDoesNotStallTheWriteWorkers: more sockets of one ticket than
// there are write workers, each flooding pings and never reading (with no
// frame budget, the worst case: pings unbounded), hold no worker past the
// write watchdog: a
// pong that cannot be written holds the socket's write lock on the socket's
// own reader goroutine, a worker waiting for that lock is a write under way,
// and the watchdog aborts the socket. Every flooder is closed, and the
// clients that read keep getting their statuses, with gaps far below the
// library's 5 s pong timeout.
func TestPingFloodDoesNotStallTheWriteWorkers(t *testing.T) {
	// 400 ms, not less: on 2 cores shared with the whole suite a good
	// reader's goroutine can wait 200 ms for the CPU, and the watchdog
	// then takes it for a stuck one (seen once in CI).
	const writeTimeout = 400 * time.Millisecond
	cfg := gateway.Config{StatusInterval: 5 * time.Millisecond, AdmitInterval: time.Hour, DisconnectGrace: time.Hour, WriteTimeout: writeTimeout}
	const good = 3
	e, ev, goods := goodReaders(t, cfg, good, "flooder", (*gwEnv).connect)
	var worst [good]time.Duration
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range goods {
		wg.Go(func() {
			last := time.Now()
			for {
				select {
				case f := <-c.Frames:
					worst[i] = max(worst[i], f.At.Sub(last))
					last = f.At
				case err := <-c.Closed:
					t.Errorf("good client %d closed: %v", i, err)
					return
				case <-stop:
					return
				}
			}
		})
	}

	// Each flooder sends pings of the largest payload until their pongs
	// (~40 KiB) overflow both socket buffers, so the gateway's pong write
	// blocks, holding the socket's write lock; then it just never reads.
	flooders := 40 // more than the write workers (32 on 2 cores)
	ticket := e.ticket(ev, "flooder")
	for range flooders {
		s := dialRaw(t, tinyReceiveBuffer(), e, "/queue-status/"+ev+"?ticket="+ticket)
		go func() {
			for range 300 {
				if s.ping(125) != nil {
					return
				}
			}
		}()
	}
	start := time.Now()
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		return e.gw.Sockets() == good, fmt.Sprintf("%d sockets open", e.gw.Sockets())
	})
	t.Logf("%d ping flooders closed after %v", flooders, time.Since(start))
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the flooders were closed after %v: not by the write watchdog (%v) but later", took, writeTimeout)
	}
	if got := metricValue(t, e, "waitq_ws_slow_closed_total"); got != float64(flooders) {
		t.Errorf("flooders closed as too slow: %v, want %d (by the watchdog)", got, flooders)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	for i, w := range worst {
		t.Logf("good client %d: longest gap %v", i, w)
		// Two rounds of stuck workers at most, each ended by the watchdog
		// (1.25 write timeouts): far below a stall behind the pong timeout.
		if w > 1500*time.Millisecond {
			t.Errorf("good client %d waited %v between frames", i, w)
		}
	}
}

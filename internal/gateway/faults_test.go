package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack/promtext"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/internal/testkit/testws"
)

// TestDisconnectGrace: a waiting user who reconnects within the grace keeps
// the place, on any gateway; one who stays away longer is removed; one who
// never connected (an HTTP-only client) is left alone.
func TestDisconnectGrace(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	cfg := gateway.Config{StatusInterval: 50 * time.Millisecond, AdmitInterval: 50 * time.Millisecond, DisconnectGrace: 600 * time.Millisecond}
	gwA := startGateway(t, sys, cfg, nil)
	gwB := startGateway(t, sys, cfg, gwA.clock)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "holder", 1) // takes the only slot, so nobody else is admitted
	sys.Join(ev, "flaky", 2)
	sys.Join(ev, "gone", 3)
	sys.Join(ev, "http-only", 4)
	holder := gwA.connect(t, ev, "holder")
	holder.Admitted(10 * time.Second)

	flaky := gwA.connect(t, ev, "flaky")
	flaky.Status(waiting(1, 3), 10*time.Second)
	gone := gwA.connect(t, ev, "gone")
	gone.Status(waiting(2, 3), 10*time.Second)

	// flaky drops and comes back through the other gateway within the grace.
	_ = flaky.WS.CloseNow()
	time.Sleep(300 * time.Millisecond)
	flaky = gwB.connect(t, ev, "flaky")
	flaky.Status(waiting(1, 3), 5*time.Second)

	// gone drops for good: after the grace it is out of line.
	_ = gone.WS.CloseNow()
	flaky.Status(waiting(1, 2), 10*time.Second)
	if users := sys.WaitingIDs(ev); !slices.Equal(users, []string{"flaky", "http-only"}) {
		t.Fatalf("line after the grace: %v", users)
	}
}

// TestPresenceOutlivesADeadGateway: a gateway cut off from Redis for good
// (killed, or partitioned) cannot let go of the presences it holds. A user
// whose newest socket is on another gateway, or who still has a socket
// there, keeps the place however long the dead gateway stays silent; a
// user whose only socket was on the dead gateway is removed a grace after
// it went silent.
func TestPresenceOutlivesADeadGateway(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	cfg := gateway.Config{StatusInterval: 50 * time.Millisecond, AdmitInterval: 50 * time.Millisecond, DisconnectGrace: 600 * time.Millisecond}
	storeA, err := redisstore.Dial(context.Background(), sys.Redis.URL())
	if err != nil {
		t.Fatal(err)
	}
	gwA := startGatewayOn(t, sys, storeA, cfg, nil, gateway.DefaultWriteBuffer)
	gwB := startGateway(t, sys, cfg, gwA.clock)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "holder", 1) // takes the only slot, so nobody else is admitted
	sys.Join(ev, "moved", 2)  // sockets on B, then A, then B again: B holds the presence
	sys.Join(ev, "tabs", 3)   // a socket on B, then one on A, which holds the presence
	sys.Join(ev, "only-a", 4) // a socket on A only
	gwA.connect(t, ev, "holder").Admitted(10 * time.Second)

	gwB.connect(t, ev, "moved").Status(waiting(1, 3), 10*time.Second)
	gwA.connect(t, ev, "moved").Status(waiting(1, 3), 10*time.Second)
	moved := gwB.connect(t, ev, "moved")
	moved.Status(waiting(1, 3), 10*time.Second)
	tabs := gwB.connect(t, ev, "tabs")
	tabs.Status(waiting(2, 3), 10*time.Second)
	gwA.connect(t, ev, "tabs").Status(waiting(2, 3), 10*time.Second)
	gwA.connect(t, ev, "only-a").Status(waiting(3, 3), 10*time.Second)

	_ = storeA.Close() // A is cut off: it neither reads the line nor lets go
	// only-a goes a grace after A went silent (a little more than the
	// grace and a half); the others keep their places meanwhile and after.
	tabs.Status(waiting(2, 2), 10*time.Second)
	time.Sleep(2 * cfg.DisconnectGrace)
	if users := sys.WaitingIDs(ev); !slices.Equal(users, []string{"moved", "tabs"}) {
		t.Fatalf("line once A is gone: %v, want [moved tabs]", users)
	}
	moved.Status(waiting(1, 2), 5*time.Second)
}

// TestSlowReaderIsClosed: a client that stops reading is closed as too slow
// while the others keep getting every status on schedule.
func TestSlowReaderIsClosed(t *testing.T) {
	slowReaderIsDropped(t, 4, (*gwEnv).connect, func(t *testing.T, e *gwEnv, ev, user string) io.Closer {
		ws := dialNoRead(t, e.wsURL("/queue-status/"+ev+"?ticket="+e.ticket(ev, user)))
		return closerFunc(ws.CloseNow)
	})
}

// closerFunc is a func as an io.Closer.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// goodReaders starts a gateway with cfg (a 4 KiB send buffer) over a line of
// n good users (good0…, stamped 10…) and one more, bad, behind them
// (stamped 100), connects the good ones with connect and waits for each
// one's first status.
func goodReaders(t *testing.T, cfg gateway.Config, n int, bad string, connect func(e *gwEnv, t *testing.T, ev, user string) *testws.Client) (*gwEnv, string, []*testws.Client) {
	t.Helper()
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	e := startGatewayBuf(t, sys, cfg, nil, 4096)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	for i := range n {
		sys.Join(ev, fmt.Sprintf("good%d", i), int64(10+i))
	}
	sys.Join(ev, bad, 100)
	goods := make([]*testws.Client, n)
	for i := range goods {
		goods[i] = connect(e, t, ev, fmt.Sprintf("good%d", i))
		goods[i].Status(waiting(int64(i+1), int64(n+1)), 10*time.Second)
	}
	return e, ev, goods
}

// slowReaderIsDropped runs five good clients (connect) and one that never
// reads (openSlow) at a 5 ms interval, sendQueue frames allowed behind a
// write: the slow one must be closed as too slow, once, and the good ones
// keep their cadence and stay open.
func slowReaderIsDropped(t *testing.T, sendQueue int, connect func(e *gwEnv, t *testing.T, ev, user string) *testws.Client,
	openSlow func(t *testing.T, e *gwEnv, ev, user string) io.Closer) {
	const interval = 5 * time.Millisecond
	cfg := gateway.Config{StatusInterval: interval, AdmitInterval: time.Hour, DisconnectGrace: time.Hour, SendQueue: sendQueue, WriteTimeout: 200 * time.Millisecond}
	const good = 5
	e, ev, goods := goodReaders(t, cfg, good, "slow", connect)

	// The good clients read all along, noting the longest gap between
	// frames.
	type seen struct {
		frames int
		worst  time.Duration
		err    error
	}
	stop := make(chan struct{})
	results := make(chan seen, good)
	for _, c := range goods {
		go func() {
			var s seen
			last := time.Now()
			for {
				select {
				case f := <-c.Frames:
					s.worst = max(s.worst, f.At.Sub(last))
					last = f.At
					s.frames++
				case s.err = <-c.Closed:
					results <- s
					return
				case <-stop:
					results <- s
					return
				}
			}
		}()
	}

	// The slow client has a tiny receive buffer and never reads.
	slow := openSlow(t, e, ev, "slow")
	defer slow.Close()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return e.gw.Sockets() == good+1, fmt.Sprintf("%d sockets open", e.gw.Sockets())
	})
	start := time.Now()
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		return e.gw.Sockets() == good, fmt.Sprintf("%d sockets open", e.gw.Sockets())
	})
	t.Logf("slow reader closed after %v", time.Since(start))
	time.Sleep(200 * time.Millisecond) // and the others go on
	close(stop)
	for i := range good {
		s := <-results
		t.Logf("good client: %d frames, longest gap %v", s.frames, s.worst)
		if s.err != nil {
			t.Errorf("a good client was closed: %v", s.err)
		}
		// A bound on isolation, not a speed target: no stall anywhere near
		// the slow reader's write timeout.
		if s.worst > 150*time.Millisecond {
			t.Errorf("good client %d waited %v between frames", i, s.worst)
		}
	}
	if got := metricValue(t, e, "waitq_ws_slow_closed_total"); got != 1 {
		t.Fatalf("slow closes counted: %v, want 1", got)
	}
}

// dialNoRead opens a WebSocket with a 4 KiB receive buffer and never reads
// from it, so the server's writes back up.
func dialNoRead(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DialContext: tinyReceiveBuffer().DialContext}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// tinyReceiveBuffer is a dialer whose connections have a 4 KiB receive
// buffer.
func tinyReceiveBuffer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
}

// TestAdmissionToldAfterItsHoldSendsNoToken: an admission whose notice
// reaches the gateway only after its stay ended (Redis froze between the
// admission and its reply, as the fault campaign saw after Redis pauses)
// sends no admitted frame with an already dead token: the user is told
// "expired", and the gateway counts it.
func TestAdmissionToldAfterItsHoldSendsNoToken(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	cfg := gateway.Config{StatusInterval: 50 * time.Millisecond, AdmitInterval: time.Hour, DisconnectGrace: time.Hour}
	e := startGateway(t, sys, cfg, nil)
	ev := testenv.EventID(t)
	created := sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "late", 1)
	c := e.connect(t, ev, "late")
	c.Status(waiting(1, 1), 10*time.Second)

	// The admission runs as of a moment more than a stay ago, so its
	// notice carries a hold that has already ended when it arrives.
	hold := time.Duration(created.StaySeconds) * time.Second
	then := e.clock.Now().Add(-hold - time.Second).UnixMilli()
	res, err := sys.Store.Tick(context.Background(), queue.TickRequest{EventIDs: []string{ev}, NowMs: then, AdmitBatch: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || !slices.Equal(res[0].Admitted, []string{"late"}) || res[0].ExpiresAt > e.clock.Now().UnixMilli() {
		t.Fatalf("tick: %+v", res)
	}
	deadline := time.After(10 * time.Second)
	for expired := false; !expired; {
		select {
		case f := <-c.Frames:
			if f.Type == "admitted" {
				t.Fatalf("admitted frame for a hold that had ended: %s", f.Raw)
			}
			var s gateway.StatusFrame
			expired = json.Unmarshal(f.Raw, &s) == nil && s.State == gateway.StateExpired
		case err := <-c.Closed:
			t.Fatalf("socket closed: %v", err)
		case <-deadline:
			t.Fatal("no expired status within 10s")
		}
	}
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		m, err := promtext.Scrape(context.Background(), http.DefaultClient, e.srv.URL+"/metrics")
		return err == nil && m["waitq_admitted_late_total"] == 1, fmt.Sprintf("waitq_admitted_late_total = %v (%v), want 1", m["waitq_admitted_late_total"], err)
	})
}

package loadgen

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/waitq/waitq/internal/promtext"
	"github.com/waitq/waitq/internal/redisproc"
)

// Fixed settings of the ws-gateway child process.
const (
	gatewayReadyWait = 30 * time.Second // start → /readyz 200
	gatewayStopWait  = 10 * time.Second // SIGTERM → SIGKILL
	gatewayOutputCap = 64 << 10         // bytes of the gateway's log passed on to stderr
)

// gatewayProc is the ws-gateway child process under measurement.
type gatewayProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	base   string // http://127.0.0.1:port
	out    *capWriter
	passed []string // WAITQ_ variables taken over from loadgen's environment
	http   *http.Client
}

// startGateway starts the binary of cfg against st with a free loopback port
// and waits until its /readyz answers 200; on error nothing is left running.
func startGateway(ctx context.Context, cfg socketsConfig, st *stack, secret string, stderr io.Writer) (*gatewayProc, error) {
	port, err := redisproc.FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	own := map[string]string{
		"WAITQ_HTTP_ADDR":        addr,
		"WAITQ_KAFKA_BROKERS":    strings.Join(st.Brokers(), ","),
		"WAITQ_REDIS_URL":        st.redis.URL(),
		"WAITQ_TICKET_SECRET":    secret,
		"WAITQ_STATUS_INTERVAL":  cfg.interval.String(),
		"WAITQ_ADMIT_INTERVAL":   "1h",
		"WAITQ_DISCONNECT_GRACE": "1h",
		"WAITQ_LOG_LEVEL":        "warn",
		"WAITQ_SHUTDOWN_TIMEOUT": "5s",
	}
	g := &gatewayProc{
		exited: make(chan struct{}),
		base:   "http://" + addr,
		out:    &capWriter{w: stderr, left: gatewayOutputCap},
		http:   &http.Client{Timeout: metricsTimeout, Transport: &http.Transport{Proxy: nil}},
	}
	env := make([]string, 0, len(os.Environ())+len(own))
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, mine := own[k]; mine {
			continue
		}
		if strings.HasPrefix(k, "WAITQ_") {
			g.passed = append(g.passed, kv)
		}
		env = append(env, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(own)) {
		env = append(env, k+"="+own[k])
	}
	g.cmd = exec.Command(cfg.gatewayBin)
	g.cmd.Env = env
	g.cmd.Stdout, g.cmd.Stderr = g.out, g.out
	// Its own process group: a terminal's Ctrl-C reaches loadgen only, which
	// then closes the clients before it stops the gateway.
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := g.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ws-gateway %s: %w", cfg.gatewayBin, err)
	}
	go func() {
		_ = g.cmd.Wait()
		close(g.exited)
	}()
	if err := waitReady(ctx, g.base+"/readyz", g.exited, gatewayReadyWait); err != nil {
		g.stop(stderr)
		return nil, fmt.Errorf("ws-gateway: %w", err)
	}
	return g, nil
}

// pid returns the gateway's process id.
func (g *gatewayProc) pid() int { return g.cmd.Process.Pid }

// passedEnv describes the WAITQ_ variables the gateway took over from
// loadgen's environment, for the target line.
func (g *gatewayProc) passedEnv() string {
	if len(g.passed) == 0 {
		return ""
	}
	return "; from the environment: " + strings.Join(g.passed, " ")
}

// alive reports whether the gateway is still running.
func (g *gatewayProc) alive() bool {
	select {
	case <-g.exited:
		return false
	default:
		return true
	}
}

// stop ends the gateway: SIGTERM, then SIGKILL after gatewayStopWait.
func (g *gatewayProc) stop(stderr io.Writer) {
	defer g.http.CloseIdleConnections()
	if !g.alive() {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
		return
	case <-time.After(gatewayStopWait):
	}
	fmt.Fprintf(stderr, "loadgen: ws-gateway did not stop within %s of SIGTERM; killing it\n", gatewayStopWait)
	_ = g.cmd.Process.Kill()
	<-g.exited
}

// metrics reads the gateway's unlabelled Prometheus samples.
func (g *gatewayProc) metrics(ctx context.Context) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	m, err := promtext.Scrape(ctx, g.http, g.base+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("ws-gateway metrics: %w", err)
	}
	return m, nil
}

// capWriter passes the first left bytes to w and drops the rest, so a
// gateway logging every socket cannot flood the progress output.
type capWriter struct {
	mu      sync.Mutex
	w       io.Writer
	left    int
	dropped int
}

// Write implements io.Writer; it never fails.
func (c *capWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(c.left, len(p))
	if n > 0 {
		_, _ = c.w.Write(p[:n])
		c.left -= n
	}
	c.dropped += len(p) - n
	return len(p), nil
}

// Dropped returns the bytes not passed on.
func (c *capWriter) Dropped() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

package test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/promtext"
	"github.com/waitq/waitq/internal/testenv"
	"github.com/waitq/waitq/pkg/queue"
)

// binDir holds the binaries built once by TestMain.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "waitq-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	build := exec.Command("go", "build", "-race", "-o", dir+string(os.PathSeparator), "../cmd/producer-api", "../cmd/ingest-consumer", "../cmd/ws-gateway")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binaries:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is one service process.
type proc struct {
	t    *testing.T
	name string
	env  []string
	addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	logs bytes.Buffer
}

// startProc starts binary name with env (WAITQ_HTTP_ADDR set to a free port)
// and waits until its /readyz answers 200.
func startProc(t *testing.T, name string, env ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, addr: freeAddr(t)}
	p.env = append(append(os.Environ(), "WAITQ_HTTP_ADDR="+p.addr, "WAITQ_LOG_LEVEL=info"), env...)
	p.start()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("--- logs of %s ---\n%s", p.name, p.logs.String())
			p.mu.Unlock()
		}
	})
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (w lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(b)
}

func (p *proc) start() {
	p.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, p.name))
	cmd.Env = p.env
	out := lockedWriter{&p.mu, &p.logs}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	p.mu.Lock()
	p.cmd = cmd
	p.mu.Unlock()
	testenv.Eventually(p.t, 20*time.Second, func() (bool, string) {
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err != nil {
			return false, fmt.Sprintf("%s not ready: %v", p.name, err)
		}
		resp.Body.Close()
		return resp.StatusCode == 200, fmt.Sprintf("%s /readyz: %d", p.name, resp.StatusCode)
	})
}

// kill ends the process with SIGKILL: no shutdown code runs.
func (p *proc) kill() { p.signal(syscall.SIGKILL) }

// stop ends the process with SIGTERM and returns how its graceful exit went.
func (p *proc) stop() error { return p.signal(syscall.SIGTERM) }

func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	return cmd.Wait()
}

// output returns what the process printed.
func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// restart starts the process again with the same settings.
func (p *proc) restart() { p.t.Helper(); p.start() }

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// ctxTimeout is a context for one call of a test.
func ctxTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// runOnce runs binary name with a clean WAITQ_ environment and returns its
// output and exit error.
func runOnce(t *testing.T, name string, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := ctxTimeout(20 * time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, name))
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "WAITQ_HTTP_ADDR=127.0.0.1:0"}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// metric returns the value of an unlabelled metric from the process's
// /metrics, or -1 when it cannot be read.
func (p *proc) metric(t *testing.T, name string) float64 {
	t.Helper()
	m, err := promtext.Scrape(t.Context(), http.DefaultClient, "http://"+p.addr+"/metrics")
	if v, ok := m[name]; err == nil && ok {
		return v
	}
	return -1
}

func newTicketSigner(t *testing.T) *queue.TicketSigner {
	t.Helper()
	s, err := queue.NewTicketSigner(ticketSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ticketFor signs a ticket as producer-api would at the join.
func ticketFor(s *queue.TicketSigner, ev, user string) string {
	now := time.Now()
	return s.Sign(queue.Ticket{EventID: ev, UserID: user, JoinedAt: now.UnixMilli(), Expires: now.Add(time.Hour).UnixMilli()})
}

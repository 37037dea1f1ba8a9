package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/stack/svcproc"
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

// proc is one service process, started by startProc: Addr, Kill, Stop,
// Output and Metrics are svcproc.Proc's.
type proc struct {
	*svcproc.Proc
	t    *testing.T
	name string
}

// startProc starts binary name with env (WAITQ_HTTP_ADDR set to a free port)
// and waits until its /readyz answers 200.
func startProc(t *testing.T, name string, env ...string) *proc {
	t.Helper()
	if name == "producer-api" {
		// These tests stand where an authenticating proxy would: they name
		// their users with X-User-Id.
		env = append([]string{"WAITQ_TRUST_USER_HEADER=true", "WAITQ_TRUSTED_PROXIES=127.0.0.1,::1"}, env...)
	}
	sp, err := svcproc.Start(t.Context(), filepath.Join(binDir, name), svcproc.Options{
		Env:        append(append(os.Environ(), "WAITQ_LOG_LEVEL=info"), env...),
		ReadyLimit: 20 * time.Second,
	})
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{Proc: sp, t: t, name: name}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- logs of %s ---\n%s", p.name, p.Output())
		}
	})
	return p
}

// restart starts the process again with the same settings.
func (p *proc) restart() {
	p.t.Helper()
	if err := p.Restart(p.t.Context()); err != nil {
		p.t.Fatalf("restart %s: %v", p.name, err)
	}
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
	m, err := p.Metrics(t.Context())
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

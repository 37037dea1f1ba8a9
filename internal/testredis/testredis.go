// Package testredis starts a real redis-server for tests, on a free loopback
// port, and can stop, kill, pause and restart it to inject faults. With
// WAITQ_TEST_REDIS_URL set, tests use that server instead (and fault
// injection is unavailable).
package testredis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/testenv"
)

// Server is a redis-server child process (or an external server).
type Server struct {
	tb         testing.TB
	url        string
	port       int
	dir        string
	persistent bool

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Option configures a Server.
type Option func(*Server)

// Persistent makes the server write an append-only file, so data survives
// Stop/Start as it would in production.
func Persistent() Option { return func(s *Server) { s.persistent = true } }

// Start returns a running Redis for tb, stopped at cleanup. When redis-server
// is not installed it fails in CI and skips elsewhere.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := &Server{tb: tb}
	for _, o := range opts {
		o(s)
	}
	if url := os.Getenv("WAITQ_TEST_REDIS_URL"); url != "" {
		s.url = url
		return s
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Unavailable(tb, "redis-server not on PATH (apt-get install -y redis-server)")
	}
	s.dir = tb.TempDir()
	s.port = freePort(tb)
	s.url = fmt.Sprintf("redis://127.0.0.1:%d/0", s.port)
	s.Restart()
	tb.Cleanup(s.Kill)
	return s
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return s.url }

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Client returns a new client of the server, closed at cleanup.
func (s *Server) Client() *redis.Client {
	opt, err := redis.ParseURL(s.url)
	if err != nil {
		s.tb.Fatalf("testredis: %v", err)
	}
	c := redis.NewClient(opt)
	s.tb.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *Server) local() {
	s.tb.Helper()
	if s.dir == "" {
		s.tb.Skip("testredis: fault injection needs a local redis-server, not WAITQ_TEST_REDIS_URL")
	}
}

// Restart starts the server again on the same port (after Stop or Kill) and
// waits until it answers.
func (s *Server) Restart() {
	s.tb.Helper()
	s.local()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.tb.Fatal("testredis: Restart of a running server")
	}
	args := []string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--daemonize", "no",
		"--logfile", filepath.Join(s.dir, "redis.log"),
	}
	if s.persistent {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		testenv.Unavailable(s.tb, "start redis-server: %v", err)
	}
	s.cmd = cmd
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.tb.Fatalf("testredis: server on %s not ready: %v\n%s", s.Addr(), err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop shuts the server down gracefully (a persistent one keeps its data).
func (s *Server) Stop() { s.signal(syscall.SIGTERM, true) }

// Kill ends the server at once.
func (s *Server) Kill() { s.signal(syscall.SIGKILL, true) }

// Pause freezes the server (SIGSTOP): connections stay open, nothing answers.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP, false) }

// Resume unfreezes a paused server.
func (s *Server) Resume() { s.signal(syscall.SIGCONT, false) }

func (s *Server) signal(sig syscall.Signal, wait bool) {
	s.tb.Helper()
	s.local()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if sig == syscall.SIGKILL {
		_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused process must be able to die
	}
	_ = s.cmd.Process.Signal(sig)
	if wait {
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testredis: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

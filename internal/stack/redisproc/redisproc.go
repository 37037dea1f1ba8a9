// Package redisproc runs a real redis-server as a child process on a
// loopback port, for the tests, the dev stack and the load tool. It can stop,
// kill and restart the server on the same port and directory, so callers can
// inject faults. A Server is safe for concurrent use.
package redisproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotInstalled is returned by Start when redis-server is not on PATH.
var ErrNotInstalled = errors.New("redis-server is not on PATH (apt-get install -y redis-server)")

// Options configure a Server.
type Options struct {
	// Dir is the server's working directory (append-only file). Empty: a
	// temporary directory, removed by Close.
	Dir string
	// AppendOnly makes the server log every write to disk before it
	// answers, so data survives Stop/Kill and Restart as in production.
	AppendOnly bool
	// ReadyTimeout bounds the wait for the first PING answer (10 s).
	ReadyTimeout time.Duration
	// Cluster starts the server as a Redis Cluster node (its state in
	// nodes.conf in Dir); package rediscluster joins such nodes into a
	// cluster.
	Cluster bool
	// Locale is the server's LC_ALL (empty: this process's environment).
	// redis-server sets LC_COLLATE from it, and its Lua compares strings
	// with strcoll.
	Locale string
}

// Server is a redis-server child process.
type Server struct {
	path   string
	port   int
	bus    int // the cluster bus port, 0 unless Options.Cluster
	dir    string
	ownDir bool
	opts   Options

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	out    *headBuffer
}

// Start starts redis-server on a free 127.0.0.1 port and waits until it
// answers PING.
func Start(ctx context.Context, opts Options) (*Server, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNotInstalled
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 10 * time.Second
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s := &Server{path: path, port: port, dir: opts.Dir, opts: opts}
	// The bus's default port, port + 10000, may be taken or past 65535.
	if opts.Cluster {
		if s.bus, err = FreePort(); err != nil {
			return nil, err
		}
	}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "waitq-redis"); err != nil {
			return nil, err
		}
		s.ownDir = true
	}
	if err := s.Restart(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Restart starts the server (again, after Stop or Kill) on the same port and
// directory and waits until it answers.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		return errors.New("redisproc: restart of a running server")
	}
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--daemonize", "no", "--appendonly", "no"}
	if s.opts.AppendOnly {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	if s.opts.Cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(s.bus), "--cluster-node-timeout", "2000")
	}
	cmd := exec.Command(s.path, args...)
	if s.opts.Locale != "" {
		cmd.Env = append(os.Environ(), "LC_ALL="+s.opts.Locale)
	}
	out := &headBuffer{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("redisproc: start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited, s.out = cmd, exited, out
	s.mu.Unlock()
	return s.waitReady(ctx, exited, out)
}

// waitReady polls PING until it answers, the process exits, ctx ends or the
// ready timeout passes.
func (s *Server) waitReady(ctx context.Context, exited <-chan struct{}, out *headBuffer) error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(s.opts.ReadyTimeout)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redisproc: redis-server on %s exited at start: %s", s.Addr(), strings.TrimSpace(out.String()))
		case <-ctx.Done():
			return fmt.Errorf("redisproc: redis-server on %s: %w", s.Addr(), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redisproc: redis-server on %s did not answer within %s: %w", s.Addr(), s.opts.ReadyTimeout, err)
		}
	}
}

// Stop shuts the server down gracefully and waits for it to exit.
func (s *Server) Stop() { s.end(syscall.SIGTERM) }

// Kill ends the server at once and waits for it to exit.
func (s *Server) Kill() { s.end(syscall.SIGKILL) }

// Output returns the beginning of what the server printed since it last
// started.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		return ""
	}
	return s.out.String()
}

// Close kills the server and removes a temporary directory.
func (s *Server) Close() {
	s.Kill()
	if s.ownDir {
		os.RemoveAll(s.dir)
	}
}

func (s *Server) end(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisproc: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// headBuffer keeps the first max bytes written to it, for error messages.
type headBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// Write implements io.Writer; it never fails.
func (t *headBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String returns what was kept.
func (t *headBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

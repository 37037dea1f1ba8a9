// Package testredis gives tests a real redis-server (internal/stack/redisproc) on
// a free loopback port, stopped at cleanup, with faults to inject: stop,
// kill and restart. With WAITQ_TEST_REDIS_URL set, tests use that
// server instead (and fault injection is unavailable); StartCluster gives a
// Redis Cluster of three masters. Without redis-server
// a test fails in strict mode (CI) and skips elsewhere.
package testredis

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/stack/rediscluster"
	"github.com/waitq/waitq/internal/stack/redisproc"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// Server is a redis-server for one test.
type Server struct {
	tb   testing.TB
	url  string
	proc *redisproc.Server // nil for an external server
}

// Option configures a Server.
type Option func(*redisproc.Options)

// Persistent makes the server write an append-only file, so data survives
// Stop/Kill and Restart as it would in production.
func Persistent() Option { return func(o *redisproc.Options) { o.AppendOnly = true } }

// Start returns a running Redis for tb, killed at cleanup.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	if url := os.Getenv("WAITQ_TEST_REDIS_URL"); url != "" {
		return &Server{tb: tb, url: url}
	}
	o := redisproc.Options{Dir: tb.TempDir()}
	for _, opt := range opts {
		opt(&o)
	}
	p, err := redisproc.Start(context.Background(), o)
	if errors.Is(err, redisproc.ErrNotInstalled) {
		testenv.Unavailable(tb, "%v", err)
	}
	if err != nil {
		tb.Fatalf("testredis: %v", err)
	}
	tb.Cleanup(func() {
		p.Close()
		if tb.Failed() {
			tb.Logf("redis-server output:\n%s", p.Output())
		}
	})
	return &Server{tb: tb, url: p.URL(), proc: p}
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return s.url }

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

func (s *Server) local() *redisproc.Server {
	s.tb.Helper()
	if s.proc == nil {
		s.tb.Skip("testredis: fault injection needs a local redis-server, not WAITQ_TEST_REDIS_URL")
	}
	return s.proc
}

// Restart starts the server again on the same port after Stop or Kill.
func (s *Server) Restart() {
	s.tb.Helper()
	if err := s.local().Restart(context.Background()); err != nil {
		s.tb.Fatalf("testredis: %v", err)
	}
}

// Stop shuts the server down gracefully (a persistent one keeps its data).
func (s *Server) Stop() { s.local().Stop() }

// Kill ends the server at once.
func (s *Server) Kill() { s.local().Kill() }

// StartCluster returns a running Redis Cluster of three masters for tb
// (package rediscluster), killed at cleanup; its nodes' output is logged
// when tb failed.
func StartCluster(tb testing.TB) *rediscluster.Cluster {
	tb.Helper()
	c, err := rediscluster.Start(context.Background(), rediscluster.Options{Dir: tb.TempDir()})
	if errors.Is(err, rediscluster.ErrNotInstalled) {
		testenv.Unavailable(tb, "%v", err)
	}
	if err != nil {
		tb.Fatalf("testredis: %v", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("redis cluster output:\n%s", c.Output())
		}
		c.Close()
	})
	return c
}

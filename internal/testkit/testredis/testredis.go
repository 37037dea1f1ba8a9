// Package testredis gives tests a real redis-server (stack.StartRedis) on
// a free loopback port, stopped at cleanup, with faults to inject: stop,
// kill and restart. With WAITQ_TEST_REDIS_URL set, tests use that
// server instead (and fault injection is unavailable); StartCluster gives a
// Redis Cluster of three masters. Without redis-server
// a test fails in strict mode (CI) and skips elsewhere.
package testredis

import (
	"context"
	"os"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/stack"
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
type Option func(*stack.RedisOptions)

// Persistent makes the server write an append-only file, so data survives
// Stop/Kill and Restart as it would in production.
func Persistent() Option { return func(o *stack.RedisOptions) { o.AppendOnly = true } }

// Locale starts the server under the locale name (LC_ALL), which its Lua's
// string comparisons follow.
func Locale(name string) Option { return func(o *stack.RedisOptions) { o.Locale = name } }

// Start returns a running Redis for tb, killed at cleanup.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	if url := os.Getenv("WAITQ_TEST_REDIS_URL"); url != "" {
		return &Server{tb: tb, url: url}
	}
	o := stack.RedisOptions{Dir: tb.TempDir()}
	for _, opt := range opts {
		opt(&o)
	}
	r := start(tb, o)
	tb.Cleanup(func() {
		r.Close()
		if tb.Failed() {
			tb.Logf("redis-server output:\n%s", r.Output())
		}
	})
	return &Server{tb: tb, url: r.URL(), proc: r.Server}
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
	r := start(tb, stack.RedisOptions{Cluster: true, Dir: tb.TempDir()})
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("redis cluster output:\n%s", r.Output())
		}
		r.Close()
	})
	return r.Cluster
}

// start starts the Redis of o; without redis-server (or redis-cli) the
// test fails in strict mode and skips elsewhere.
func start(tb testing.TB, o stack.RedisOptions) *stack.Redis {
	tb.Helper()
	r, err := stack.StartRedis(context.Background(), o)
	if stack.NotInstalled(err) {
		testenv.Unavailable(tb, "%v", err)
	}
	if err != nil {
		tb.Fatalf("testredis: %v", err)
	}
	return r
}

// Backends are the two servers the Lua scripts run on, by name: a real
// redis-server (Start) and miniredis (the devstack's default), each a
// client of a fresh server for the test.
func Backends() map[string]func(testing.TB) redis.UniversalClient {
	return map[string]func(testing.TB) redis.UniversalClient{
		"redis-server": func(tb testing.TB) redis.UniversalClient { return Start(tb).Client() },
		"miniredis": func(tb testing.TB) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: miniredis.RunT(tb).Addr()})
		},
	}
}

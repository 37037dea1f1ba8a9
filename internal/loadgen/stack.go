package loadgen

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/waitq/waitq/internal/redisproc"
)

// stack is the broker and the Redis a measurement runs against: kfake in this
// process and a redis-server child process, both on 127.0.0.1.
type stack struct {
	kafka  *kfake.Cluster
	redis  *redisproc.Server
	client *redis.Client // of redis, closed by Close
}

// startStack starts kfake and redis-server; on error nothing is left running.
func startStack(ctx context.Context) (*stack, error) {
	rs, err := redisproc.Start(ctx, redisproc.Options{})
	if errors.Is(err, redisproc.ErrNotInstalled) {
		return nil, fmt.Errorf("%w, or run scripts/bench-joinpath.sh, which does", err)
	}
	if err != nil {
		return nil, err
	}
	kc, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		rs.Close()
		return nil, fmt.Errorf("start kfake: %w", err)
	}
	return &stack{kafka: kc, redis: rs, client: redis.NewClient(&redis.Options{Addr: rs.Addr()})}, nil
}

// Brokers returns the broker addresses.
func (s *stack) Brokers() []string { return s.kafka.ListenAddrs() }

// serviceEnv is the environment of a waitq service run against the stack:
// its broker and Redis, the fast track as given, no per-client rate limit
// (one client address sends everything), and extra on top.
func (s *stack) serviceEnv(fast bool, extra map[string]string) map[string]string {
	m := map[string]string{
		"WAITQ_KAFKA_BROKERS": strings.Join(s.Brokers(), ","),
		"WAITQ_REDIS_URL":     s.redis.URL(),
		"WAITQ_FAST_TRACK":    fmt.Sprint(fast),
		"WAITQ_RATE":          "0",
		"WAITQ_CONNECT_RATE":  "0", // gateways only; others ignore it
	}
	maps.Copy(m, extra)
	return m
}

// Close stops the broker and the redis-server.
func (s *stack) Close() {
	_ = s.client.Close()
	s.kafka.Close()
	s.redis.Close()
}

// redisVersion asks the stack's redis-server for its version; "?" when it
// cannot.
func (s *stack) redisVersion(ctx context.Context) string {
	info, err := redisInfo(ctx, s.client, "server")
	if v, ok := info["redis_version"]; err == nil && ok {
		return v
	}
	return "?"
}

// redisInfo returns the key:value lines of INFO sections, read with one
// command.
func redisInfo(ctx context.Context, rc *redis.Client, sections ...string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	text, err := rc.Info(ctx, sections...).Result()
	if err != nil {
		return nil, fmt.Errorf("redis INFO %s: %w", strings.Join(sections, " "), err)
	}
	out := map[string]string{}
	for line := range strings.Lines(text) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

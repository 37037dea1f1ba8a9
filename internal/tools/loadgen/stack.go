package loadgen

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack/rediscluster"
	"github.com/waitq/waitq/internal/stack/redisproc"
)

// stack is the broker and the Redis a measurement runs against: kfake in this
// process and a redis-server child process, or a Redis Cluster of three
// (package rediscluster), all on 127.0.0.1.
type stack struct {
	kafka   *kfake.Cluster
	redis   *redisproc.Server     // nil on a cluster
	cluster *rediscluster.Cluster // nil on one server
	client  redis.UniversalClient // of redis or cluster, closed by Close
}

// startStack starts kfake and redis-server, or with cluster a Redis
// Cluster; on error nothing is left running.
func startStack(ctx context.Context, cluster bool) (*stack, error) {
	st := &stack{}
	var err error
	if cluster {
		st.cluster, err = rediscluster.Start(ctx, rediscluster.Options{})
	} else {
		st.redis, err = redisproc.Start(ctx, redisproc.Options{})
	}
	if errors.Is(err, redisproc.ErrNotInstalled) || errors.Is(err, rediscluster.ErrNotInstalled) {
		return nil, fmt.Errorf("%w, or run scripts/bench-joinpath.sh, which does", err)
	}
	if err != nil {
		return nil, err
	}
	if st.client, err = st.conn().Client(); err == nil {
		st.kafka, err = kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			err = fmt.Errorf("start kfake: %w", err)
		}
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// conn says where the stack's Redis is.
func (s *stack) conn() redisstore.Conn {
	if s.cluster != nil {
		return redisstore.Conn{URL: redisstore.DefaultURL, Cluster: s.cluster.Addrs()}
	}
	return redisstore.Conn{URL: s.redis.URL()}
}

// redisEnv returns the Redis settings of a service run against the stack.
func (s *stack) redisEnv() map[string]string {
	c := s.conn()
	return map[string]string{"WAITQ_REDIS_URL": c.URL, "WAITQ_REDIS_CLUSTER": strings.Join(c.Cluster, ",")}
}

// redisKind names the stack's Redis for a table's target line.
func (s *stack) redisKind(ctx context.Context) string {
	if s.cluster != nil {
		return fmt.Sprintf("Redis Cluster of %d redis-server %s children", len(s.cluster.Addrs()), s.redisVersion(ctx))
	}
	return "redis-server " + s.redisVersion(ctx) + " child"
}

// Brokers returns the broker addresses.
func (s *stack) Brokers() []string { return s.kafka.ListenAddrs() }

// serviceEnv is the environment of a waitq service run against the stack:
// its broker and Redis, the fast track as given, no per-client rate limit
// (one client address sends everything), and extra on top.
func (s *stack) serviceEnv(fast bool, extra map[string]string) map[string]string {
	m := map[string]string{
		"WAITQ_KAFKA_BROKERS": strings.Join(s.Brokers(), ","),
		"WAITQ_FAST_TRACK":    fmt.Sprint(fast),
		"WAITQ_RATE":          "0",
		"WAITQ_CONNECT_RATE":  "0", // gateways only; others ignore it
	}
	maps.Copy(m, s.redisEnv())
	maps.Copy(m, extra)
	return m
}

// Close stops the broker and the Redis.
func (s *stack) Close() {
	if s.client != nil {
		_ = s.client.Close()
	}
	if s.kafka != nil {
		s.kafka.Close()
	}
	if s.redis != nil {
		s.redis.Close()
	}
	if s.cluster != nil {
		s.cluster.Close()
	}
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
func redisInfo(ctx context.Context, rc redis.UniversalClient, sections ...string) (map[string]string, error) {
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

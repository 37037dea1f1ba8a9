package loadgen

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack"
)

// infra is the broker and the Redis a measurement runs against (package
// stack): kfake in this process and a redis-server child process, or a
// Redis Cluster of three, all on 127.0.0.1.
type infra struct {
	kafka  *kfake.Cluster
	redis  *stack.Redis
	client redis.UniversalClient // of redis, closed by Close
}

// startInfra starts kfake and redis-server, or with cluster a Redis
// Cluster; on error nothing is left running.
func startInfra(ctx context.Context, cluster bool) (*infra, error) {
	r, err := stack.StartRedis(ctx, stack.RedisOptions{Cluster: cluster})
	if stack.NotInstalled(err) {
		return nil, fmt.Errorf("%w, or run scripts/bench-joinpath.sh, which does", err)
	}
	if err != nil {
		return nil, err
	}
	st := &infra{redis: r}
	if st.client, err = r.Conn().Client(); err == nil {
		st.kafka, err = stack.StartKafka(stack.KafkaOptions{})
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// redisKind names the Redis for a table's target line.
func (s *infra) redisKind(ctx context.Context) string {
	if s.redis.Cluster != nil {
		return fmt.Sprintf("Redis Cluster of %d redis-server %s children", len(s.redis.Cluster.Addrs()), s.redisVersion(ctx))
	}
	return "redis-server " + s.redisVersion(ctx) + " child"
}

// Brokers returns the broker addresses.
func (s *infra) Brokers() []string { return s.kafka.ListenAddrs() }

// serviceEnv is the environment of a waitq service run against the broker
// and the Redis: its broker and Redis, the fast track as given, no
// per-client rate limit (one client address sends everything), and extra
// on top.
func (s *infra) serviceEnv(fast bool, extra map[string]string) map[string]string {
	m := map[string]string{
		"WAITQ_KAFKA_BROKERS": strings.Join(s.Brokers(), ","),
		"WAITQ_FAST_TRACK":    fmt.Sprint(fast),
		"WAITQ_RATE":          "0",
		"WAITQ_CONNECT_RATE":  "0", // gateways only; others ignore it
		"WAITQ_HOLD_RATE":     "0", // gateways only: releases and verifies from one address
	}
	maps.Copy(m, s.redis.Env())
	maps.Copy(m, extra)
	return m
}

// Close stops the broker and the Redis.
func (s *infra) Close() {
	if s.client != nil {
		_ = s.client.Close()
	}
	if s.kafka != nil {
		s.kafka.Close()
	}
	s.redis.Close()
}

// redisVersion asks the redis-server for its version; "?" when it cannot.
func (s *infra) redisVersion(ctx context.Context) string {
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
	return redisstore.ServerInfo(ctx, rc, sections...)
}

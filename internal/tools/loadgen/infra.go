package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack"
)

// infra is the one way a measurement starts what it runs against
// (package stack): the broker and the Redis, kfake in this process and a
// redis-server child process, or a Redis Cluster of three, all on
// 127.0.0.1, and waitq's services over them (services.go).
type infra struct {
	services
	kafka  *kfake.Cluster
	redis  *stack.Redis
	client redis.UniversalClient // of redis, closed by stop
}

// startInfra starts kfake and redis-server, or with cluster a Redis
// Cluster; on error nothing is left running. Measurements start it through
// startStack, which also stops it.
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
		st.stop()
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

// stop stops the broker and the Redis.
func (s *infra) stop() {
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

// newRun returns a run's random number and the event it measures with,
// loadgen-<kind>-<the number in 16 hex digits>.
func newRun(kind string) (ev string, run uint64) {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	run = binary.BigEndian.Uint64(b[:])
	return fmt.Sprintf("loadgen-%s-%016x", kind, run), run
}

// openStore returns a Store on the Redis conn names, the fast track off,
// and the function that closes its client.
func openStore(conn redisstore.Conn) (*redisstore.Store, func(), error) {
	rc, err := conn.Client()
	if err != nil {
		return nil, nil, err
	}
	store, err := redisstore.New(rc, redisstore.Options{})
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return store, func() { _ = rc.Close() }, nil
}

// deleteStatusesEvent deletes ev's keys and registration the way the admin
// DELETE does (Store.DeleteEvent), then its tombstone: it has no log.
func deleteStatusesEvent(store *redisstore.Store, ev string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := store.DeleteEvent(ctx, ev, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("delete the event %s: %w", ev, err)
	}
	return store.ClearTombstone(ctx, ev)
}

// eventNode returns a client of the server that holds ev's keys: the one
// server, or a cluster's master of ev's hash slot.
func eventNode(ctx context.Context, rc redis.UniversalClient, ev string) (*redis.Client, error) {
	switch c := rc.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
		defer cancel()
		node, err := c.MasterForKey(ctx, redisstore.WaitingKey(ev))
		if err != nil {
			return nil, fmt.Errorf("the cluster's master of %s: %w", ev, err)
		}
		return node, nil
	}
	return nil, fmt.Errorf("a Redis client of type %T", rc)
}

// serverCPU returns the server's CPU time (redisstore.ServerCPU), within
// metricsTimeout.
func serverCPU(ctx context.Context, node *redis.Client) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	return redisstore.ServerCPU(ctx, node)
}

// usedMemory returns the server's INFO memory used_memory, in bytes.
func usedMemory(ctx context.Context, node *redis.Client) (int64, error) {
	info, err := redisInfo(ctx, node, "memory")
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(info["used_memory"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO memory used_memory %q: %w", info["used_memory"], err)
	}
	return n, nil
}

// scriptTime returns the time the server spent running scripts (EVALSHA
// and EVAL) since its statistics were last reset: INFO commandstats.
func scriptTime(ctx context.Context, node *redis.Client) (time.Duration, error) {
	info, err := redisInfo(ctx, node, "commandstats")
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, cmd := range []string{"cmdstat_evalsha", "cmdstat_eval"} {
		for field := range strings.SplitSeq(info[cmd], ",") {
			if v, ok := strings.CutPrefix(field, "usec="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("INFO commandstats %s %q: %w", cmd, info[cmd], err)
				}
				total += time.Duration(us) * time.Microsecond
			}
		}
	}
	return total, nil
}

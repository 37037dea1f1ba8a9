package loadgen

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/redisstore"
)

// metricsTimeout bounds one read of what Redis says of itself.
const metricsTimeout = 10 * time.Second

// redisInfo returns the key:value lines of INFO sections, read with one
// command.
func redisInfo(ctx context.Context, rc redis.UniversalClient, sections ...string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	return redisstore.ServerInfo(ctx, rc, sections...)
}

// deleteBenchEvent deletes ev's keys and registration the way the admin
// DELETE does (Store.DeleteEvent), then its tombstone: it has no log.
func deleteBenchEvent(store *redisstore.Store, ev string) error {
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
// metricsTimeout; 0 on a cluster's client, which has no one server.
func serverCPU(ctx context.Context, rc redis.UniversalClient) (time.Duration, error) {
	node, ok := rc.(*redis.Client)
	if !ok {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	return redisstore.ServerCPU(ctx, node)
}

// redisUse is what a server has used so far: its CPU time (serverCPU) and
// its memory, INFO memory's used_memory in bytes.
type redisUse struct {
	cpu time.Duration
	mem int64
}

// redisUsage reads node's redisUse.
func redisUsage(ctx context.Context, node *redis.Client) (redisUse, error) {
	cpu, err := serverCPU(ctx, node)
	if err != nil {
		return redisUse{}, err
	}
	info, err := redisInfo(ctx, node, "memory")
	if err != nil {
		return redisUse{}, err
	}
	mem, err := strconv.ParseInt(info["used_memory"], 10, 64)
	if err != nil {
		return redisUse{}, fmt.Errorf("INFO memory used_memory %q: %w", info["used_memory"], err)
	}
	return redisUse{cpu: cpu, mem: mem}, nil
}

// commandTimes returns the server's time in each command since its
// statistics were last reset (INFO commandstats, which counts the commands
// a script calls as well as the script's own call, that time included).
func commandTimes(ctx context.Context, node redis.UniversalClient) (map[string]time.Duration, error) {
	info, err := redisInfo(ctx, node, "commandstats")
	if err != nil {
		return nil, err
	}
	times := map[string]time.Duration{}
	for cmd, us := range commandStats(info, "usec") {
		times[cmd] = time.Duration(us) * time.Microsecond
	}
	return times, nil
}

// commandStats returns one figure ("calls", "usec") of each command's line
// of INFO commandstats (cmdstat_evalsha:calls=3,usec=120,…), by command.
func commandStats(info map[string]string, figure string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range info {
		if cmd, ok := strings.CutPrefix(k, "cmdstat_"); ok {
			for kv := range strings.SplitSeq(v, ",") {
				if f, n, ok := strings.Cut(kv, "="); ok && f == figure {
					out[cmd], _ = strconv.ParseFloat(n, 64)
				}
			}
		}
	}
	return out
}

// redisVersion asks the server for its version; "?" when it cannot.
func redisVersion(ctx context.Context, rc redis.UniversalClient) string {
	info, err := redisInfo(ctx, rc, "server")
	if v, ok := info["redis_version"]; err == nil && ok {
		return v
	}
	return "?"
}

// Package rediscluster runs a real Redis Cluster for the tests and the load
// tool: redis-server child processes (package redisproc) in cluster mode on
// free loopback ports, joined by redis-cli --cluster create, masters only.
// It can move one hash slot from its master to another, key by key, as
// redis-cli --cluster reshard does, but choosing the slot (an event's) and
// pacing the keys so that clients meet the slot half moved. A Cluster is
// safe for concurrent use.
package rediscluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/stack/redisproc"
)

// ErrNotInstalled is returned by Start when redis-server or redis-cli is not
// on PATH.
var ErrNotInstalled = errors.New("redis-server and redis-cli are needed on PATH (apt-get install -y redis-server)")

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Options configure a Cluster.
type Options struct {
	// Masters is the number of master nodes (3, the fewest
	// redis-cli --cluster create accepts).
	Masters int
	// Dir holds one directory per node. Empty: a temporary directory,
	// removed by Close.
	Dir string
	// ReadyTimeout bounds the wait for cluster_state:ok on every node
	// (30 s).
	ReadyTimeout time.Duration
}

// Cluster is a running Redis Cluster.
type Cluster struct {
	nodes   []*redisproc.Server
	clients []*redis.Client // one per node, in the order of nodes
	dir     string
	ownDir  bool
}

// Start starts opts.Masters nodes, creates the cluster (the slots split
// evenly) and waits until every node reports cluster_state:ok and knows
// every other. On error nothing is left running.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return nil, ErrNotInstalled
	}
	if opts.Masters == 0 {
		opts.Masters = 3
	}
	if opts.Masters < 3 {
		return nil, fmt.Errorf("rediscluster: %d masters: a cluster needs at least 3", opts.Masters)
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 30 * time.Second
	}
	c := &Cluster{dir: opts.Dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "waitq-rediscluster"); err != nil {
			return nil, err
		}
		c.ownDir = true
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	for i := range opts.Masters {
		dir := filepath.Join(c.dir, "node"+strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		n, err := redisproc.Start(ctx, redisproc.Options{Dir: dir, Cluster: true})
		if errors.Is(err, redisproc.ErrNotInstalled) {
			return nil, ErrNotInstalled
		}
		if err != nil {
			return nil, fmt.Errorf("rediscluster: node %d: %w", i, err)
		}
		c.nodes = append(c.nodes, n)
		c.clients = append(c.clients, redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1}))
	}
	cctx, cancel := context.WithTimeout(ctx, opts.ReadyTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(cctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("rediscluster: redis-cli %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	if err := c.waitReady(cctx); err != nil {
		return nil, err
	}
	return c, nil
}

// waitReady polls every node until it reports cluster_state:ok and lists
// every node as a connected master.
func (c *Cluster) waitReady(ctx context.Context) error {
	for {
		saw, ok := "", true
		for i, rc := range c.clients {
			info, err := rc.ClusterInfo(ctx).Result()
			if err == nil && !strings.Contains(info, "cluster_state:ok") {
				err = errors.New("cluster_state is not ok")
			}
			var nodes string
			if err == nil {
				nodes, err = rc.ClusterNodes(ctx).Result()
			}
			if err == nil && (strings.Count(nodes, "master") != len(c.nodes) || strings.Contains(nodes, "fail") || strings.Contains(nodes, "handshake")) {
				err = fmt.Errorf("not every master known yet:\n%s", nodes)
			}
			if err != nil {
				ok, saw = false, fmt.Sprintf("node %d (%s): %v", i, c.nodes[i].Addr(), err)
				break
			}
		}
		if ok {
			return nil
		}
		if !clock.Sleep(ctx, 50*time.Millisecond) {
			return fmt.Errorf("rediscluster: not ready: %s: %w", saw, ctx.Err())
		}
	}
}

// Addrs returns the nodes' host:port addresses, to use as seeds.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return out
}

// Output returns the beginning of what each node printed, for a failing
// test's log.
func (c *Cluster) Output() string {
	var b strings.Builder
	for _, n := range c.nodes {
		fmt.Fprintf(&b, "--- redis-server %s\n%s\n", n.Addr(), n.Output())
	}
	return b.String()
}

// Close kills every node and removes a temporary directory.
func (c *Cluster) Close() {
	for _, rc := range c.clients {
		_ = rc.Close()
	}
	for _, n := range c.nodes {
		n.Close()
	}
	if c.ownDir {
		os.RemoveAll(c.dir)
	}
}

// node returns the client of the node at addr.
func (c *Cluster) node(addr string) (*redis.Client, error) {
	for i, n := range c.nodes {
		if n.Addr() == addr {
			return c.clients[i], nil
		}
	}
	return nil, fmt.Errorf("rediscluster: no node %s", addr)
}

// Owner returns the address of the master that serves slot, as the first
// node sees it.
func (c *Cluster) Owner(ctx context.Context, slot int) (string, error) {
	ranges, err := c.clients[0].ClusterSlots(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("rediscluster: CLUSTER SLOTS: %w", err)
	}
	for _, r := range ranges {
		if slot >= r.Start && slot <= r.End && len(r.Nodes) > 0 {
			return r.Nodes[0].Addr, nil
		}
	}
	return "", fmt.Errorf("rediscluster: slot %d has no master", slot)
}

// Slot returns the hash slot of key, as the server computes it.
func (c *Cluster) Slot(ctx context.Context, key string) (int, error) {
	n, err := c.clients[0].ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("rediscluster: CLUSTER KEYSLOT %s: %w", key, err)
	}
	return int(n), nil
}

// MoveSlot moves slot from its master to the master at to, as a reshard
// does: the target imports it, the source migrates it, the keys go over
// one at a time with pace between them (so that clients meet the slot half
// moved: ASK, TRYAGAIN), then every node is told its new owner.
func (c *Cluster) MoveSlot(ctx context.Context, slot int, to string, pace time.Duration) error {
	from, err := c.Owner(ctx, slot)
	if err != nil {
		return err
	}
	if from == to {
		return fmt.Errorf("rediscluster: slot %d is already on %s", slot, to)
	}
	src, err := c.node(from)
	if err != nil {
		return err
	}
	dst, err := c.node(to)
	if err != nil {
		return err
	}
	srcID, err := src.ClusterMyID(ctx).Result()
	if err != nil {
		return fmt.Errorf("rediscluster: CLUSTER MYID of %s: %w", from, err)
	}
	dstID, err := dst.ClusterMyID(ctx).Result()
	if err != nil {
		return fmt.Errorf("rediscluster: CLUSTER MYID of %s: %w", to, err)
	}
	host, port, _ := strings.Cut(to, ":")
	steps := []struct {
		rc   *redis.Client
		args []any
	}{
		{dst, []any{"cluster", "setslot", slot, "importing", srcID}},
		{src, []any{"cluster", "setslot", slot, "migrating", dstID}},
	}
	for _, s := range steps {
		if err := s.rc.Do(ctx, s.args...).Err(); err != nil {
			return fmt.Errorf("rediscluster: %v: %w", s.args, err)
		}
	}
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 1).Result()
		if err != nil {
			return fmt.Errorf("rediscluster: CLUSTER GETKEYSINSLOT %d: %w", slot, err)
		}
		if len(keys) == 0 {
			break
		}
		if err := src.Do(ctx, "migrate", host, port, "", 0, 5000, "keys", keys[0]).Err(); err != nil {
			return fmt.Errorf("rediscluster: MIGRATE %s to %s: %w", keys[0], to, err)
		}
		if !clock.Sleep(ctx, pace) {
			return ctx.Err()
		}
	}
	// The target first, so that the slot always has an owner that takes
	// it; then the source; then the rest learn it (redis-cli's order).
	order := []*redis.Client{dst, src}
	for _, rc := range c.clients {
		if rc != dst && rc != src {
			order = append(order, rc)
		}
	}
	for _, rc := range order {
		if err := rc.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err(); err != nil {
			return fmt.Errorf("rediscluster: CLUSTER SETSLOT %d NODE on %s: %w", slot, rc.Options().Addr, err)
		}
	}
	return nil
}

// FlushScripts empties the script cache of the node at addr, as a restart
// or a node new to the cluster would have it: the next EVALSHA there gets
// NOSCRIPT.
func (c *Cluster) FlushScripts(ctx context.Context, addr string) error {
	rc, err := c.node(addr)
	if err != nil {
		return err
	}
	if err := rc.ScriptFlush(ctx).Err(); err != nil {
		return fmt.Errorf("rediscluster: SCRIPT FLUSH on %s: %w", addr, err)
	}
	return nil
}

package stack

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/alicebob/miniredis/v2"

	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack/rediscluster"
	"github.com/waitq/waitq/internal/stack/redisproc"
)

// RedisOptions configure the Redis StartRedis starts.
type RedisOptions struct {
	// Cluster starts a Redis Cluster of three masters (package
	// rediscluster) instead of one server.
	Cluster bool
	// Miniredis falls back on miniredis in this process when redis-server
	// is not on PATH (one server only).
	Miniredis bool
	// Dir is the server's working directory, or the cluster's (one
	// directory per node). Empty: a temporary one, removed by Close.
	Dir string
	// AppendOnly makes the one server log every write before it answers,
	// so its data survives Stop/Kill and Restart (redisproc.Options).
	AppendOnly bool
	// Locale is the one server's LC_ALL (redisproc.Options).
	Locale string
}

// Redis is a Redis started by StartRedis: exactly one of Server, Cluster
// and Miniredis is set.
type Redis struct {
	// Server is the redis-server child process, with its faults to
	// inject (Stop, Kill, Restart).
	Server *redisproc.Server
	// Cluster is the Redis Cluster.
	Cluster *rediscluster.Cluster
	// Miniredis is the in-process stand-in taken for want of redis-server.
	Miniredis *miniredis.Miniredis
}

// StartRedis starts a redis-server child process on a free loopback port,
// or a Redis Cluster with o.Cluster, or miniredis when redis-server is
// missing and o.Miniredis allows it. Without the binaries it needs, its
// error satisfies NotInstalled. On error nothing is left running.
func StartRedis(ctx context.Context, o RedisOptions) (*Redis, error) {
	if o.Cluster {
		c, err := rediscluster.Start(ctx, rediscluster.Options{Dir: o.Dir})
		if err != nil {
			return nil, err
		}
		return &Redis{Cluster: c}, nil
	}
	s, err := redisproc.Start(ctx, redisproc.Options{Dir: o.Dir, AppendOnly: o.AppendOnly, Locale: o.Locale})
	if err == nil {
		return &Redis{Server: s}, nil
	}
	if !o.Miniredis || !errors.Is(err, redisproc.ErrNotInstalled) {
		return nil, err
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("miniredis: %w", err)
	}
	return &Redis{Miniredis: m}, nil
}

// NotInstalled reports whether err is StartRedis's for want of redis-server
// or redis-cli on PATH.
func NotInstalled(err error) bool {
	return errors.Is(err, redisproc.ErrNotInstalled) || errors.Is(err, rediscluster.ErrNotInstalled)
}

// Conn says where the Redis is, as services and redisstore.DialConn take it.
func (r *Redis) Conn() redisstore.Conn {
	switch {
	case r.Cluster != nil:
		return redisstore.Conn{URL: redisstore.DefaultURL, Cluster: r.Cluster.Addrs()}
	case r.Miniredis != nil:
		return redisstore.Conn{URL: "redis://" + r.Miniredis.Addr() + "/0"}
	}
	return redisstore.Conn{URL: r.Server.URL()}
}

// URL is the redis:// URL of the one server (of a cluster: the URL its
// nodes share, naming no host).
func (r *Redis) URL() string { return r.Conn().URL }

// Env returns the Redis settings of a service run against r:
// WAITQ_REDIS_URL and WAITQ_REDIS_CLUSTER.
func (r *Redis) Env() map[string]string {
	c := r.Conn()
	return map[string]string{"WAITQ_REDIS_URL": c.URL, "WAITQ_REDIS_CLUSTER": strings.Join(c.Cluster, ",")}
}

// Output returns what the redis-server processes printed, as much as they
// keep ("" for miniredis).
func (r *Redis) Output() string {
	switch {
	case r.Cluster != nil:
		return r.Cluster.Output()
	case r.Server != nil:
		return r.Server.Output()
	}
	return ""
}

// Close stops the Redis.
func (r *Redis) Close() {
	switch {
	case r.Cluster != nil:
		r.Cluster.Close()
	case r.Server != nil:
		r.Server.Close()
	case r.Miniredis != nil:
		r.Miniredis.Close()
	}
}

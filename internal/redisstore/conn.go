package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Conn says where the live state is: one Redis by URL, or a Redis Cluster
// by its seed nodes.
type Conn struct {
	// URL is a redis:// or rediss:// URL. Alone it names the one server;
	// with Cluster it gives only the scheme (TLS), user, password and
	// client options every node shares, and its host is not used.
	URL string
	// Cluster lists host:port seed nodes of a Redis Cluster (empty: one
	// server, URL's). Any node answering is enough to learn the rest.
	Cluster []string
}

// Client returns a new client of c, cluster-aware when c names seeds, with
// ContextTimeoutEnabled so that a caller's deadline bounds the socket wait
// too: without it a Redis that hangs (paused, partitioned) holds every call
// for the read timeout times the client's own retries, unseen by readiness.
// It does not contact a server; a malformed URL or seed is an error.
func (c Conn) Client() (redis.UniversalClient, error) {
	if len(c.Cluster) == 0 {
		opt, err := redis.ParseURL(c.URL)
		if err != nil {
			return nil, fmt.Errorf("redisstore: parse url: %w", err)
		}
		opt.ContextTimeoutEnabled = true
		return redis.NewClient(opt), nil
	}
	opt, err := c.clusterOptions()
	if err != nil {
		return nil, err
	}
	opt.ContextTimeoutEnabled = true
	return redis.NewClusterClient(opt), nil
}

// Validate reports what is wrong with c, without contacting a server.
func (c Conn) Validate() error {
	if len(c.Cluster) == 0 {
		if _, err := redis.ParseURL(c.URL); err != nil {
			return fmt.Errorf("redisstore: parse url: %w", err)
		}
		return nil
	}
	_, err := c.clusterOptions()
	return err
}

// clusterOptions checks the seeds and reads the shared options from the URL
// with go-redis's own cluster URL parser (the seeds as its host and addr
// parameters), so that a cluster accepts the options a cluster client has.
func (c Conn) clusterOptions() (*redis.ClusterOptions, error) {
	var errs []error
	for _, s := range c.Cluster {
		if err := checkSeed(s); err != nil {
			errs = append(errs, err)
		}
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		errs = append(errs, fmt.Errorf("parse url: %w", err))
	} else if db := u.Path; db != "" && db != "/" && db != "/0" {
		errs = append(errs, fmt.Errorf("url %s names database %s: a Redis Cluster has database 0 only", u.Redacted(), db[1:]))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("redisstore: cluster: %w", err)
	}
	u.Host, u.Path = c.Cluster[0], ""
	q := u.Query()
	for _, s := range c.Cluster[1:] {
		q.Add("addr", s)
	}
	u.RawQuery = q.Encode()
	opt, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("redisstore: cluster: parse url: %w", err)
	}
	return opt, nil
}

// checkSeed reports whether s is a usable host:port.
func checkSeed(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("seed %q: %w", s, err)
	}
	if n, err := strconv.Atoi(port); host == "" || err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("seed %q: want host:port with a port of 1-65535", s)
	}
	return nil
}

// DialConn returns a Store with a new client of c (Conn.Client) and the
// zero Options.
func DialConn(_ context.Context, c Conn) (*Store, error) {
	rc, err := c.Client()
	if err != nil {
		return nil, err
	}
	return New(rc, Options{})
}

// ServerInfo returns the fields of the server's INFO sections, by name.
func ServerInfo(ctx context.Context, rc redis.UniversalClient, sections ...string) (map[string]string, error) {
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

// ServerCPU returns the CPU time node's server has used so far (INFO cpu's
// used_cpu_sys and used_cpu_user): what the benchmarks and loadgen read
// before and after a piece of work to say what it cost Redis.
func ServerCPU(ctx context.Context, node *redis.Client) (time.Duration, error) {
	info, err := ServerInfo(ctx, node, "cpu")
	if err != nil {
		return 0, err
	}
	var total float64
	for _, k := range []string{"used_cpu_sys", "used_cpu_user"} {
		v, ok := info[k]
		if !ok {
			return 0, errors.New("INFO cpu lacks used_cpu_sys or used_cpu_user")
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu %s %q: %w", k, v, err)
		}
		total += f
	}
	return time.Duration(total * float64(time.Second)), nil
}

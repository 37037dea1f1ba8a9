package redisstore

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestConnClient(t *testing.T) {
	tests := []struct {
		name    string
		conn    Conn
		cluster []string // the seeds the client gets; nil: a single-node client
		err     string   // part of the error; "" for none
	}{
		{name: "single node", conn: Conn{URL: DefaultURL}},
		{name: "cluster seeds", conn: Conn{URL: DefaultURL, Cluster: []string{"127.0.0.1:7000", "[::1]:7001", "redis-2:7002"}},
			cluster: []string{"127.0.0.1:7000", "[::1]:7001", "redis-2:7002"}},
		{name: "cluster with credentials and options", conn: Conn{URL: "rediss://u:p@ignored:1?dial_timeout=2s", Cluster: []string{"10.0.0.1:6379"}},
			cluster: []string{"10.0.0.1:6379"}},
		{name: "bad url", conn: Conn{URL: "http://127.0.0.1:6379"}, err: "invalid URL scheme"},
		{name: "seed without port", conn: Conn{URL: DefaultURL, Cluster: []string{"127.0.0.1:7000", "127.0.0.1"}}, err: `seed "127.0.0.1"`},
		{name: "seed with a bad port", conn: Conn{URL: DefaultURL, Cluster: []string{"127.0.0.1:70000"}}, err: "port of 1-65535"},
		{name: "seed without host", conn: Conn{URL: DefaultURL, Cluster: []string{":7000"}}, err: "port of 1-65535"},
		{name: "cluster and a database", conn: Conn{URL: "redis://:secret@127.0.0.1:6379/2", Cluster: []string{"127.0.0.1:7000"}}, err: "database 0 only"},
		{name: "cluster and a single-node option", conn: Conn{URL: "redis://127.0.0.1:6379?db=1", Cluster: []string{"127.0.0.1:7000"}}, err: "unexpected option"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			verr := tc.conn.Validate()
			c, err := tc.conn.Client()
			if tc.err != "" {
				if err == nil || verr == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(verr.Error(), tc.err) {
					t.Fatalf("Client: %v, Validate: %v; want an error with %q", err, verr, tc.err)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil || verr != nil {
				t.Fatalf("Client: %v, Validate: %v", err, verr)
			}
			defer c.Close()
			switch cc := c.(type) {
			case *redis.Client:
				if tc.cluster != nil {
					t.Fatalf("got a single-node client, want a cluster client of %v", tc.cluster)
				}
				if !cc.Options().ContextTimeoutEnabled {
					t.Error("ContextTimeoutEnabled is off")
				}
			case *redis.ClusterClient:
				o := cc.Options()
				if strings.Join(o.Addrs, ",") != strings.Join(tc.cluster, ",") {
					t.Errorf("seeds %v, want %v", o.Addrs, tc.cluster)
				}
				if !o.ContextTimeoutEnabled {
					t.Error("ContextTimeoutEnabled is off")
				}
				if strings.HasPrefix(tc.conn.URL, "rediss://") && (o.TLSConfig == nil || o.Username != "u" || o.Password != "p") {
					t.Errorf("the URL's TLS and credentials were not kept: %+v", o)
				}
			default:
				t.Fatalf("client of type %T", c)
			}
		})
	}
}

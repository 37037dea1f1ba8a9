package loadgen

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testredis"
)

// statusesLine is the output line of "loadgen statuses": the fields issue
// 30 names, then the memory fields.
var statusesLine = regexp.MustCompile(`^statuses: waiting=(\d+) rounds=(\d+) redis_cpu_us_per_user_round=(\d+\.\d{3}) wall_ms_per_round=(\d+\.\d) redis_bytes_per_user=(-?\d+\.\d) redis_bytes_per_user_with_presence=(-?\d+\.\d) redis_cpu_us_per_user_connect=(\d+\.\d{3})$`)

// TestStatusesFlags checks the flags of "loadgen statuses": -redis is
// required and parsed, each bound is enforced, -h asks for the help.
func TestStatusesFlags(t *testing.T) {
	const url = "-redis=redis://127.0.0.1:6379/0"
	tests := []struct {
		name    string
		args    []string
		wantErr string // "" for none
	}{
		{"defaults and a Redis", []string{url}, ""},
		{"the issue's form", []string{url, "-waiting", "20000000", "-rounds", "4", "-keep"}, ""},
		{"a cluster", []string{"-redis", "redis://", "-redis-cluster", "127.0.0.1:7000, 127.0.0.1:7001"}, ""},
		{"no Redis", nil, "-redis: required, the Redis to measure (redis://HOST:PORT/0)"},
		{"not a Redis URL", []string{"-redis", "http://x/0"}, `-redis "http://x/0": redisstore: parse url: redis: invalid URL scheme: http`},
		{"a bad seed", []string{"-redis", "redis://", "-redis-cluster", "nohost"}, `-redis "redis://": redisstore: cluster: seed "nohost": address nohost: missing port in address`},
		{"nobody waiting", []string{url, "-waiting", "0"}, "-waiting 0: must be between 1 and 20000000"},
		{"too many waiting", []string{url, "-waiting", "20000001"}, "-waiting 20000001: must be between 1 and 20000000"},
		{"no round", []string{url, "-rounds", "0"}, "-rounds 0: must be between 1 and 1000"},
		{"no batch", []string{url, "-batch", "0"}, "-batch 0: must be between 1 and 100000"},
		{"no timeout", []string{url, "-timeout", "0s"}, "-timeout 0s: must be positive and at most 10m0s"},
		{"the store's path", []string{url, "-path", "store"}, ""},
		{"an unknown path", []string{url, "-path", "fast"}, `-path "fast": must be journal or store`},
		{"everything wrong", []string{"-waiting", "-1", "-rounds", "1001"},
			"-redis: required, the Redis to measure (redis://HOST:PORT/0)\n-waiting -1: must be between 1 and 20000000\n-rounds 1001: must be between 1 and 1000"},
		{"leftover arguments", []string{url, "extra"}, `unexpected arguments ["extra"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cfg statusesConfig
			var stderr bytes.Buffer
			ok, err := parseFlags("statuses", &cfg, tc.args, &stderr)
			if ok != (tc.wantErr == "") || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
				t.Fatalf("parseFlags(%q) = %v, %v; want error %q", tc.args, ok, err, tc.wantErr)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if err := RunStatuses(context.Background(), []string{"-h"}, &stdout, &stderr); err != nil || stdout.Len() != 0 ||
		!strings.Contains(stderr.String(), "Usage of loadgen statuses:") || !strings.Contains(stderr.String(), "-waiting") {
		t.Fatalf("-h: %v, stdout %q, stderr:\n%s", err, stdout.String(), stderr.String())
	}
}

// TestStatusesLineFormat pins the output line: its fields, their order and
// their precision.
func TestStatusesLineFormat(t *testing.T) {
	r := statusesResult{waiting: 1_000_000, rounds: 4, cpu: 10 * time.Second, wall: 10 * time.Second,
		loadBytes: 150_000_000, presenceBytes: 230_000_000, connectCPU: 3 * time.Second}
	const want = "statuses: waiting=1000000 rounds=4 redis_cpu_us_per_user_round=2.500 wall_ms_per_round=2500.0 redis_bytes_per_user=150.0 redis_bytes_per_user_with_presence=230.0 redis_cpu_us_per_user_connect=3.000"
	if got := r.String(); got != want || !statusesLine.MatchString(got) {
		t.Fatalf("line\n%s\nwant\n%s", got, want)
	}
	s := &simEvent{id: "ev", run: 7}
	if u := s.user(123); !queue.IsVisitorID(u) {
		t.Fatalf("user id %q is not shaped as a visitor id", u)
	}
	if m := s.join(123, 1123); m.Validate() != nil || m.TS != 1123 || len(m.JoinKey) != 32 {
		t.Fatalf("join %+v: %v", m, m.Validate())
	}
}

// TestStatusesAgainstRedis runs the command against a real redis-server:
// one line that parses, every user read in each round (their presence
// marked), and the event's keys gone afterwards unless -keep.
func TestStatusesAgainstRedis(t *testing.T) {
	srv := testredis.Start(t)
	rc := srv.Client()
	ctx := context.Background()

	fields := runStatuses(t, "-redis", srv.URL(), "-waiting", "2000", "-rounds", "2", "-batch", "300")
	if fields[1] != "2000" || fields[2] != "2" {
		t.Fatalf("waiting %s rounds %s", fields[1], fields[2])
	}
	for _, f := range fields[3:] {
		if v, _ := strconv.ParseFloat(f, 64); v <= 0 {
			t.Fatalf("a figure of %v is not positive", fields)
		}
	}
	if keys := statusesKeys(t, rc); len(keys) > 0 {
		t.Fatalf("keys left after the run: %v", keys)
	}
	if f := runStatuses(t, "-redis", srv.URL(), "-waiting", "500", "-rounds", "1", "-path", "store"); f[1] != "500" {
		t.Fatalf("the store's path: waiting %s", f[1])
	}

	runStatuses(t, "-redis", srv.URL(), "-waiting", "700", "-rounds", "1", "-keep")
	kept := statusesKeys(t, rc)
	ev, ok := strings.CutPrefix(kept[len(kept)-1], redisstore.EventsKey+" ")
	if !ok || strings.Count(strings.Join(kept, " "), redisstore.EventsKey) != 1 {
		t.Fatalf("keys after -keep: %v", kept)
	}
	var err error
	for key, want := range map[string]int64{redisstore.WaitingKey(ev): 700, redisstore.SeenKey(ev): 700, redisstore.JoinKeysKey(ev): 700} {
		var n int64
		if key == redisstore.JoinKeysKey(ev) {
			n, err = rc.HLen(ctx, key).Result()
		} else {
			n, err = rc.ZCard(ctx, key).Result()
		}
		if err != nil || n != want {
			t.Fatalf("%s holds %d (%v), want %d", key, n, err, want)
		}
	}
	store, err := redisstore.New(rc, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := deleteBenchEvent(store, ev); err != nil {
		t.Fatal(err)
	}
	if keys := statusesKeys(t, rc); len(keys) > 0 {
		t.Fatalf("keys left after the delete: %v", keys)
	}
}

// runStatuses runs "loadgen statuses" with args and returns the submatches
// of its one line of output.
func runStatuses(t *testing.T, args ...string) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := RunStatuses(context.Background(), args, &stdout, &stderr)
	t.Logf("loadgen statuses %s:\n%s", strings.Join(args, " "), stderr.String())
	if err != nil {
		t.Fatal(err)
	}
	out := strings.TrimSuffix(stdout.String(), "\n")
	m := statusesLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output is not one statuses line:\n%s", stdout.String())
	}
	return m
}

// statusesKeys returns the keys of the measurement's events (on every
// master of a cluster), and their entries in the event registry.
func statusesKeys(t *testing.T, rc redis.UniversalClient) []string {
	t.Helper()
	ctx := context.Background()
	var keys []string
	var mu sync.Mutex
	scan := func(ctx context.Context, node *redis.Client) error {
		found, err := node.Keys(ctx, "waitq:{loadgen-statuses-*").Result()
		mu.Lock()
		keys = append(keys, found...)
		mu.Unlock()
		return err
	}
	var err error
	if c, ok := rc.(*redis.ClusterClient); ok {
		err = c.ForEachMaster(ctx, scan)
	} else {
		err = scan(ctx, rc.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
	events, err := rc.SMembers(ctx, redisstore.EventsKey).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if strings.HasPrefix(ev, "loadgen-statuses-") {
			keys = append(keys, redisstore.EventsKey+" "+ev)
		}
	}
	return keys
}

// TestStatusesAgainstCluster runs the command against a Redis Cluster of
// three masters, given by its seeds: the line parses and no key of the
// event is left on any master.
func TestStatusesAgainstCluster(t *testing.T) {
	c := testredis.StartCluster(t)
	conn := redisstore.Conn{URL: redisstore.DefaultURL, Cluster: c.Addrs()}
	runStatuses(t, "-redis", conn.URL, "-redis-cluster", strings.Join(conn.Cluster, ","), "-waiting", "500", "-rounds", "1")
	rc, err := conn.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if keys := statusesKeys(t, rc); len(keys) > 0 {
		t.Fatalf("keys left: %v", keys)
	}
}

package producer_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// redisCalls returns how many times Redis ran each command, from INFO
// commandstats.
func redisCalls(t *testing.T, sys *testsys.System) map[string]int {
	t.Helper()
	info, err := sys.Redis.Client().Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		calls[strings.TrimPrefix(name, "cmdstat_")], _ = strconv.Atoi(n)
	}
	return calls
}

// TestPublicMetricsAreNoRedisAmplifier: /metrics is public; a flood of
// scrapes, one after another and many at once, reads the events from Redis
// once (one SMEMBERS and one pipeline per event, with one ZCOUNT of the
// people away for an event that keeps places while away), not once per scrape, and
// every scrape still carries every event's figures.
func TestPublicMetricsAreNoRedisAmplifier(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	const events = 20
	ev := testenv.EventID(t)
	for i := range events {
		if r := e.putEvent(t, fmt.Sprintf("%s-%d", ev, i), `{"capacity":5}`); r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
	}
	before := redisCalls(t, sys)
	check := func(r reply) {
		if r.status != 200 {
			t.Errorf("/metrics: %d", r.status)
			return
		}
		for i := range events {
			if want := fmt.Sprintf(`waitq_event_waiting{event="%s-%d"} 0`, ev, i); !strings.Contains(string(r.body), want) {
				t.Errorf("a scrape lacks %s", want)
				return
			}
		}
	}
	for range 20 {
		check(e.do(t, "GET", "/metrics", nil, nil))
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { check(e.do(t, "GET", "/metrics", nil, nil)) })
	}
	wg.Wait()
	after := redisCalls(t, sys)
	if n := after["smembers"] - before["smembers"]; n != 1 {
		t.Errorf("40 scrapes listed the events %d times, want once", n)
	}
	// One read of an event runs three: the line, the pre-queue and the
	// turns called while away.
	if n := after["zcard"] - before["zcard"]; n != 3*events {
		t.Errorf("40 scrapes of %d events ran ZCARD %d times, want %d (one read)", events, n, 3*events)
	}
}

// TestTurnsAreOnMetrics: an event that keeps places while away shows its
// away people, turns called and lapsed on /metrics.
func TestTurnsAreOnMetrics(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":5}`); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	rdb := sys.Redis.Client()
	ctx := t.Context()
	rdb.ZAdd(ctx, redisstore.CalledKey(ev), redis.Z{Member: "u1", Score: 9e12}, redis.Z{Member: "u2", Score: 9e12})
	rdb.HSet(ctx, redisstore.StatsKey(ev), "calledTotal", 3, "lapsedTotal", 1)
	rdb.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u3", Score: 1})
	r := e.do(t, "GET", "/metrics", nil, nil)
	for _, want := range []string{
		fmt.Sprintf(`waitq_event_called{event="%s"} 2`, ev), fmt.Sprintf(`waitq_event_called_total{event="%s"} 3`, ev),
		fmt.Sprintf(`waitq_event_lapsed_total{event="%s"} 1`, ev), fmt.Sprintf(`waitq_event_away{event="%s"} 1`, ev),
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

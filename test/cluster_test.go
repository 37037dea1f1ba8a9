package test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack/rediscluster"
	"github.com/waitq/waitq/internal/testkit/testclient"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testkafka"
	"github.com/waitq/waitq/internal/testkit/testredis"
)

// clusterPath is the join path on a Redis Cluster: producer-api and
// ingest-consumer processes given the cluster's seeds, and a store on the
// cluster for the test's own reads and for the slot monitor's calls.
type clusterPath struct {
	cluster *rediscluster.Cluster
	store   *redisstore.Store
	api     testclient.Producer
	env     []string // the services' Kafka and Redis settings
}

// startClusterPath starts a three-master cluster, kfake, producer-api and
// ingest-consumer (with consumerEnv added).
func startClusterPath(t *testing.T, consumerEnv ...string) *clusterPath {
	t.Helper()
	c := testredis.StartCluster(t)
	kc := testkafka.Start(t)
	env := []string{"WAITQ_KAFKA_BROKERS=" + strings.Join(kc.ListenAddrs(), ","), "WAITQ_REDIS_CLUSTER=" + strings.Join(c.Addrs(), ",")}
	store, err := redisstore.DialConn(t.Context(), redisstore.Conn{URL: redisstore.DefaultURL, Cluster: c.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	producer := startProc(t, "producer-api", append(env, "WAITQ_TICKET_SECRET="+ticketSecret, "WAITQ_ADMIN_TOKEN="+adminToken, "WAITQ_RATE=0")...)
	startProc(t, "ingest-consumer", append(append(env, "WAITQ_KAFKA_SESSION_TIMEOUT=1500ms", "WAITQ_DISCOVERY_INTERVAL=200ms"), consumerEnv...)...)
	return &clusterPath{cluster: c, store: store, api: testclient.Producer{Base: producer.URL(), AdminToken: adminToken}, env: env}
}

// masterOf returns the address of the master serving ev's keys.
func (p *clusterPath) masterOf(t *testing.T, ev string) (addr string, slot int) {
	t.Helper()
	slot, err := p.cluster.Slot(t.Context(), redisstore.ConfigKey(ev))
	if err != nil {
		t.Fatal(err)
	}
	addr, err = p.cluster.Owner(t.Context(), slot)
	if err != nil {
		t.Fatal(err)
	}
	return addr, slot
}

// TestClusterRunsTheWholePath runs 20 events spread over the masters of a
// Redis Cluster through every step: joins through producer-api, Kafka and
// the ingest consumer, status, one monitor tick over all events (sweep and
// admit), the admissions channel, release and delete. A ws-gateway given
// the same seeds starts and is ready.
func TestClusterRunsTheWholePath(t *testing.T) {
	const events, users, capacity = 20, 5, 2
	p := startClusterPath(t, "WAITQ_FAST_TRACK=false") // admissions by the tick alone
	startProc(t, "ws-gateway", append(p.env, "WAITQ_TICKET_SECRET="+ticketSecret, "WAITQ_ADMIT_INTERVAL=1h")...)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	base := testenv.EventID(t)
	ids := make([]string, events)
	masters := map[string]int{}
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%02d", base, i)
		p.api.CreateEvent(t, ids[i], fmt.Sprintf(`{"capacity":%d,"partitions":2}`, capacity))
		addr, _ := p.masterOf(t, ids[i])
		masters[addr]++
	}
	t.Logf("events per master: %v", masters)
	if len(masters) < 2 {
		t.Fatalf("all %d events landed on one master %v; the test would prove nothing about a cluster", events, masters)
	}
	listed, err := p.store.EventIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(listed, ids) { // ids are sorted, as EventIDs is
		t.Fatalf("EventIDs %v, want %v", listed, ids)
	}

	var (
		mu     sync.Mutex
		heard  = map[string][]string{}
		subErr = make(chan error, 1)
	)
	go func() {
		subErr <- p.store.SubscribeAdmissions(ctx, func(a queue.AdmissionNotice) {
			mu.Lock()
			heard[a.EventID] = append(heard[a.EventID], a.Users...)
			mu.Unlock()
		})
	}()

	// Joins through the whole path, then every line is in stamp order.
	type joined struct {
		user  string
		stamp int64
	}
	lines := map[string][]joined{}
	for _, ev := range ids {
		for u := range users {
			j := p.api.MustJoin(t, ev, fmt.Sprintf("u%d", u))
			lines[ev] = append(lines[ev], joined{j.UserID, j.JoinedAt})
		}
		slices.SortFunc(lines[ev], func(a, b joined) int { return cmp.Or(cmp.Compare(a.stamp, b.stamp), cmp.Compare(a.user, b.user)) })
	}
	userIDs := func(js []joined) []string {
		out := make([]string, len(js))
		for i, j := range js {
			out[i] = j.user
		}
		return out
	}
	now := time.Now().UnixMilli()
	for _, ev := range ids {
		want := userIDs(lines[ev])
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			// The head is seen now, the last user an hour ago: the sweep
			// below removes exactly that one.
			b, err := p.store.Status(ctx, ev, want[:users-1], now)
			if err != nil {
				return false, err.Error()
			}
			if _, err := p.store.Status(ctx, ev, want[users-1:], now-time.Hour.Milliseconds()); err != nil {
				return false, err.Error()
			}
			for i, pl := range b.Places {
				if pl.Rank != int64(i) {
					return false, fmt.Sprintf("%s: %s is at rank %d, want %d (of %d waiting)", ev, want[i], pl.Rank, i, b.Total)
				}
			}
			return b.Total == users, fmt.Sprintf("%s: %d waiting", ev, b.Total)
		})
	}

	// One monitor tick over every event, in one call.
	res, err := p.store.Tick(ctx, queue.TickRequest{EventIDs: listed, NowMs: now, AdmitBatch: 100, PresenceCutoffMs: now - 30_000, SweepLimit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		want := userIDs(lines[ids[i]])
		if r.EventID != ids[i] || !slices.Equal(r.Swept, want[users-1:]) || !slices.Equal(r.Admitted, want[:capacity]) ||
			r.Holders != capacity || r.Waiting != users-1-capacity || r.Unknown {
			t.Errorf("tick of %s: %+v; want %v swept, %v admitted, %d holders, %d waiting", ids[i], r, want[users-1:], want[:capacity], capacity, users-1-capacity)
		}
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range ids {
			if !slices.Equal(heard[ev], userIDs(lines[ev])[:capacity]) {
				return false, fmt.Sprintf("admissions heard for %s: %v", ev, heard[ev])
			}
		}
		return true, ""
	})

	// Release: once frees a slot, twice nothing; the next tick fills it
	// with the next in line, never above the capacity.
	for _, ev := range ids {
		head := lines[ev][0].user
		for k, want := range []bool{true, false} {
			if got, _, err := p.store.Release(ctx, ev, head, now+1); err != nil || got != want {
				t.Fatalf("release %d of %s in %s: %v, %v; want %v", k+1, head, ev, got, err, want)
			}
		}
	}
	res, err = p.store.Tick(ctx, queue.TickRequest{EventIDs: listed, NowMs: now + 2, AdmitBatch: 100, PresenceCutoffMs: now - 30_000, SweepLimit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		want := userIDs(lines[ids[i]])
		if !slices.Equal(r.Admitted, want[capacity:capacity+1]) || r.Holders != capacity || r.Waiting != users-2-capacity {
			t.Errorf("second tick of %s: %+v; want %v admitted and %d holders", ids[i], r, want[capacity:capacity+1], capacity)
		}
	}

	// Delete: refused while slots are held, then every key and the
	// registration go.
	for _, ev := range ids {
		if err := p.store.DeleteEvent(ctx, ev, now+3); queue.ErrorCode(err) != queue.CodeSlotsInUse {
			t.Fatalf("delete of %s with slots held: %v, want %s", ev, err, queue.CodeSlotsInUse)
		}
		for _, u := range userIDs(lines[ev])[1 : capacity+1] {
			if ok, _, err := p.store.Release(ctx, ev, u, now+3); err != nil || !ok {
				t.Fatalf("release of %s in %s: %v, %v", u, ev, ok, err)
			}
		}
		if err := p.store.DeleteEvent(ctx, ev, now+4); err != nil {
			t.Fatalf("delete of %s: %v", ev, err)
		}
		if _, err := p.store.Event(ctx, ev); !errors.Is(err, queue.ErrEventNotFound) {
			t.Errorf("event %s after its delete: %v", ev, err)
		}
	}
	if listed, err := p.store.EventIDs(ctx); err != nil || len(listed) != 0 {
		t.Errorf("events after the deletes: %v, %v", listed, err)
	}
	cancel()
	if err := <-subErr; err != nil {
		t.Errorf("admissions subscription: %v", err)
	}
}

// TestClusterSlotMovesWhileJoinsFlow moves an event's slot to another
// master, key by key, while joins flow through the whole path with the
// fast track on (every ingest batch admits) and a slot monitor ticks; the
// target master first loses its script cache, so the move also meets
// NOSCRIPT. Every acknowledged join must end up in the line, or admitted,
// exactly once with its stamp as score (the line's order is the stamp
// order), and the holders never exceed the capacity.
func TestClusterSlotMovesWhileJoinsFlow(t *testing.T) {
	const capacity, workers, perWorker = 40, 6, 250
	p := startClusterPath(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	ev := testenv.EventID(t)
	p.api.CreateEvent(t, ev, fmt.Sprintf(`{"capacity":%d,"partitions":4}`, capacity))
	from, slot := p.masterOf(t, ev)
	to := p.cluster.Addrs()[(slices.Index(p.cluster.Addrs(), from)+1)%len(p.cluster.Addrs())]

	// The slot monitor: a tick every 20 ms, its holders sampled. Errors
	// while the slot is half moved are counted; the next tick heals them.
	tickCtx, stopTicks := context.WithCancel(ctx)
	var (
		ticks, tickErrs int
		firstErr        error
		maxHolders      int64
		ticked          = make(chan struct{})
	)
	go func() {
		defer close(ticked)
		for tickCtx.Err() == nil {
			res, err := p.store.Tick(tickCtx, queue.TickRequest{EventIDs: []string{ev}, NowMs: time.Now().UnixMilli(), AdmitBatch: 5, PresenceCutoffMs: 0, SweepLimit: 1000})
			ticks++
			if err != nil {
				tickErrs++
				firstErr = cmp.Or(firstErr, err)
			} else {
				maxHolders = max(maxHolders, res[0].Holders)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	stream := p.api.StartStream(t, ev, workers, perWorker, 3*time.Millisecond)
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		n := stream.Acked.Load()
		return n >= workers*perWorker/4, fmt.Sprintf("%d joins acknowledged", n)
	})
	if err := p.cluster.FlushScripts(ctx, to); err != nil {
		t.Fatal(err)
	}
	target := redis.NewClient(&redis.Options{Addr: to})
	defer target.Close()
	loadsBefore := scriptLoads(t, target)
	start := time.Now()
	if err := p.cluster.MoveSlot(ctx, slot, to, 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	at := stream.Acked.Load()
	t.Logf("slot %d of %s moved from %s to %s in %s; %d joins acknowledged by then", slot, ev, from, to, time.Since(start), at)
	if at >= workers*perWorker {
		t.Fatal("the move ended after the stream; the test proves nothing")
	}
	if owner, _ := p.masterOf(t, ev); owner != to {
		t.Fatalf("slot %d is served by %s after the move, want %s", slot, owner, to)
	}

	found, lost := stream.WaitForLine(p.store.Client(), ev, 60*time.Second)
	stream.ExpectRefusals()
	stopTicks()
	<-ticked
	t.Logf("slot monitor: %d ticks, %d failed (first: %v), most holders %d", ticks, tickErrs, firstErr, maxHolders)
	if lost != 0 || found != workers*perWorker {
		t.Fatalf("lost %d acknowledged joins (found %d of %d)", lost, found, workers*perWorker)
	}
	if loads := scriptLoads(t, target); loads <= loadsBefore {
		t.Errorf("the target master loaded no script after its cache was flushed (SCRIPT LOAD calls %d, before %d): NOSCRIPT was not met", loads, loadsBefore)
	}
	if maxHolders > capacity {
		t.Errorf("%d holders, capacity %d", maxHolders, capacity)
	}
	st, err := p.store.EventStatus(ctx, ev, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if st.Holders > capacity || st.Holders+st.Waiting != workers*perWorker || st.AdmittedTotal != st.Holders {
		t.Errorf("after the move: %d holders, %d waiting, %d admitted in all; want at most %d holders, %d in all, every admitted user still holding",
			st.Holders, st.Waiting, st.AdmittedTotal, capacity, workers*perWorker)
	}
}

// scriptLoads returns how many SCRIPT LOAD calls rc's server has served.
func scriptLoads(t *testing.T, rc *redis.Client) int {
	t.Helper()
	info, err := rc.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(info, "cmdstat_script|load:calls=")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
	if err != nil {
		t.Fatalf("commandstats: %v", err)
	}
	return n
}

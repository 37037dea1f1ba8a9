//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack/promtext"
	"github.com/waitq/waitq/internal/testkit/chaos"
	"github.com/waitq/waitq/internal/testkit/testclient"
	"github.com/waitq/waitq/pkg/entry"
)

// The campaign's settings: WAITQ_CHAOS_SEED (the nemesis's schedule and the
// load's choices), WAITQ_CHAOS_DURATION (how long faults are injected),
// WAITQ_CHAOS_RATE (joins a second), WAITQ_CHAOS_REPORT (a file to write
// the report's tables to) and WAITQ_CHAOS_HISTORY (a file to write the
// whole history to, as JSON). scripts/test.sh runs the defaults;
// scripts/chaos.sh a long run.
const (
	defaultSeed     = 20261123
	defaultDuration = 2 * time.Minute
	defaultRate     = 16.0

	statusInterval = time.Second
	// gapRecorded: a stretch without statuses longer than this goes into
	// the history; gapLimit: one longer than this with no fault on a
	// gateway or Redis is a violation. Statuses come every second (spread
	// over half of it) and a client gives up on a silent socket after
	// idleTimeout, so gapLimit leaves room for one reconnect.
	gapRecorded = 2500 * time.Millisecond
	gapLimit    = 6 * time.Second
	idleTimeout = 4 * time.Second
	// faultGrace: how long after a fault heals the gaps it caused may last.
	faultGrace = 8 * time.Second
	holdMs     = 8000
	// The drain after the load: while clients still following grow fewer,
	// at most maxDrain, ending after drainStall without one done.
	maxDrain   = 10 * time.Minute
	drainStall = 30 * time.Second
	// disconnectGrace is the gateways' WAITQ_DISCONNECT_GRACE: a client
	// that reaches no gateway for longer is away (its turn, when it comes,
	// is called), and is swept from the line only after the events' away
	// keep time (queue.DefaultAway: every event is created through the
	// API, which gives it).
	disconnectGrace = 10 * time.Second
)

// campaign is one run: the stack, the history and everything that writes it.
type campaign struct {
	t         *testing.T
	s         *stack
	h         *chaos.History
	rng       *lockedRand
	producers []*node
	consumers []*node
	gateways  []*node
	nodes     map[string]*node // every target by alias
	rdb       *redis.Client    // dials Redis wherever it is published now
	verifier  *entry.Verifier

	main, drop, canary, arrive string
	events                     []chaos.EventSpec // the four, as created (the drop's seed is revealed at its opening)

	addrs   sync.Map // alias → host:port now ("" while unreachable)
	faulted sync.Map // alias → true while under a fault

	fetchMu sync.Mutex
	fetched map[string]fetchState // consumers' progress, for the nemesis's guard

	users, skippedUsers atomic.Int64
	states              sync.Map // user id → the last state of each user followed now
	statuses            atomic.Int64

	shop      *shop        // waitq-guard in front of the test's origin, for the main event
	balancer  string       // the URL of the guards' balancer in front of the gateways
	arrivals  *shop        // the arrival event's guard, reporting arrivals (campaign_arrivals_test.go)
	tokens    sync.Map     // entry token → arrivalAdmission, of the arrival event's visitors
	freedSeen sync.Map     // the arrival event's released list's members already written
	dropToken atomic.Value // string: the last entry token of the drop read, for the guard's probes
	outages   atomic.Int64 // broker outages begun (they alternate pause and stop)

	// The seat holds of the main event (campaign_sales_test.go): the shop's
	// credential, when the seats went on sale, the buyers' and the shop's
	// client.
	shopToken   string
	salesStart  time.Time
	holdsClient *http.Client

	untoldMu sync.Mutex
	untold   map[string]int64 // event → unrecorded holders a FLUSHALL emptied (see flushAll)
}

type fetchState struct {
	value     float64
	increased time.Time
}

// lockedRand is a seeded source shared by the load's goroutines.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) Float64() float64 { l.mu.Lock(); defer l.mu.Unlock(); return l.r.Float64() }
func (l *lockedRand) IntN(n int) int   { l.mu.Lock(); defer l.mu.Unlock(); return l.r.IntN(n) }
func (l *lockedRand) Between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(l.Float64()*float64(hi-lo))
}

// TestFaultCampaign runs two producer-apis, three consumers and three
// gateways with the broker and Redis under a steady load of joins, sockets,
// releases and leaves, while a nemesis kills, pauses, restarts and cuts off
// containers on a seeded schedule. After the faults heal and the line
// drains, internal/testkit/chaos checks the whole history: no acknowledged join
// lost, holders within capacity, nobody admitted twice for one join, the
// line in stamp (or drawn) order, statuses for everyone connected, no seat
// sold twice or without the shop, nobody in the shop freed as a no-show
// and the no-shows' slots back before their stay ends, and recovery after
// every fault.
func TestFaultCampaign(t *testing.T) {
	seed := uint64(envInt(t, "WAITQ_CHAOS_SEED", defaultSeed))
	length := envDuration(t, "WAITQ_CHAOS_DURATION", defaultDuration)
	rate, err := strconv.ParseFloat(getenv("WAITQ_CHAOS_RATE", strconv.FormatFloat(defaultRate, 'f', -1, 64)), 64)
	if err != nil || rate <= 0 {
		t.Fatalf("WAITQ_CHAOS_RATE: %q is not a positive number", os.Getenv("WAITQ_CHAOS_RATE"))
	}
	t.Logf("fault campaign: seed %d, %v of faults, %.0f joins/s (replay: WAITQ_CHAOS_SEED=%d WAITQ_CHAOS_DURATION=%v)", seed, length, rate, seed, length)

	c := newCampaign(t, seed)
	pc := chaos.DefaultPlan(length)
	pc.Scenes = c.scenes()
	plan := chaos.Plan(seed, pc, c.targets())
	t.Logf("the nemesis's plan: %d steps", len(plan))

	ctx, stopAll := context.WithCancel(context.Background())
	defer stopAll()
	var background sync.WaitGroup
	background.Go(func() { c.poll(ctx) })
	background.Go(func() { c.sampleHolders(ctx) })
	background.Go(func() { c.sampleLines(ctx) })
	canaryCtx, stopCanaries := context.WithCancel(ctx)
	var canaries sync.WaitGroup
	canaries.Go(func() { c.canaries(canaryCtx) })

	start := time.Now()
	loadCtx, stopLoad := context.WithTimeout(ctx, length)
	defer stopLoad()
	// Clients follow their users until they are done or the drain ends: it
	// lasts while the clients still following grow fewer (a long run's
	// backlog takes minutes to admit), ending after drainStall without
	// progress, and at most maxDrain after the load.
	drainCtx, stopDrain := context.WithTimeout(ctx, length+maxDrain)
	defer stopDrain()
	var users sync.WaitGroup
	var loading sync.WaitGroup
	loading.Go(func() { c.load(loadCtx, drainCtx, rate, &users) })
	loading.Go(func() { c.probes(loadCtx) })
	var nemesis sync.WaitGroup
	nemesis.Go(func() { c.nemesis(start, plan) })

	nemesis.Wait()
	loading.Wait() // no user is started after this: users.Wait may begin
	healed := time.Now()
	t.Logf("faults over after %v; %d users started (%d skipped: too many in flight); draining", healed.Sub(start).Round(time.Second), c.users.Load(), c.skippedUsers.Load())
	drained := make(chan struct{})
	go func() { users.Wait(); close(drained) }()
	progress := time.NewTicker(10 * time.Second)
	fewest, since := c.followers(), time.Now()
	for draining := true; draining; {
		select {
		case <-progress.C:
			t.Logf("draining: %s", c.following())
			if n := c.followers(); n < fewest {
				fewest, since = n, time.Now()
			} else if time.Since(since) >= drainStall {
				t.Logf("draining: %d clients still following, none done for %v: the drain ends", n, drainStall)
				stopDrain()
			}
		case <-drained:
			draining = false
		}
	}
	progress.Stop()
	t.Logf("drained %v after the last fault", time.Since(healed).Round(time.Second))
	// The canaries run on a little, so that the last faults' recovery is
	// measured against fresh joins.
	time.Sleep(2 * time.Second)
	stopCanaries()
	canaries.Wait()
	stopAll()
	background.Wait()
	c.h.AddStatuses(c.statuses.Load())

	report := chaos.Check(c.h, c.checkConfig())
	md := report.Markdown()
	t.Logf("fault campaign, seed %d, %v:\n%s", seed, length, md)
	if path := os.Getenv("WAITQ_CHAOS_REPORT"); path != "" {
		head := fmt.Sprintf("Seed %d, %v of faults, %.0f joins/s, run %s (`WAITQ_CHAOS_SEED=%d WAITQ_CHAOS_DURATION=%v`).\n\n",
			seed, length, rate, start.UTC().Format(time.RFC3339), seed, length)
		if err := os.WriteFile(path, []byte(head+md), 0o644); err != nil {
			t.Errorf("write the report: %v", err)
		}
	}
	if path := os.Getenv("WAITQ_CHAOS_HISTORY"); path != "" {
		if err := c.h.WriteJSON(path); err != nil {
			t.Errorf("write the history: %v", err)
		}
	}
	for _, v := range report.Violations() {
		t.Error(v)
	}
}

// following counts the users still followed, by their last state, with
// the lines' lengths.
// followers counts the clients still following their users.
func (c *campaign) followers() int {
	n := 0
	c.states.Range(func(_, _ any) bool { n++; return true })
	return n
}

func (c *campaign) following() string {
	n := map[gateway.UserState]int{}
	c.states.Range(func(_, v any) bool {
		n[v.(gateway.UserState)]++
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return fmt.Sprintf("%v; waiting %d and %d, holding %d and %d", n,
		c.rdb.ZCard(ctx, redisstore.WaitingKey(c.main)).Val(), c.rdb.ZCard(ctx, redisstore.WaitingKey(c.drop)).Val(),
		c.rdb.ZCard(ctx, redisstore.HoldersKey(c.main)).Val(), c.rdb.ZCard(ctx, redisstore.HoldersKey(c.drop)).Val())
}

// newCampaign starts the stack and creates the events: main (an open
// event), drop (a ticket drop opening a little after the start), canary
// (room for every probe join) and arrive (an arrival window: no-shows'
// slots freed).
func newCampaign(t *testing.T, seed uint64) *campaign {
	s := newStack(t)
	c := &campaign{
		t: t, s: s, h: &chaos.History{},
		rng:     &lockedRand{r: rand.New(rand.NewPCG(seed, ^seed))},
		nodes:   map[string]*node{"redis": s.Redis, "kafka": s.Kafka},
		fetched: map[string]fetchState{},
	}
	for _, a := range []string{"producer-a", "producer-b"} {
		n, _ := s.ProducerNamed(a)
		c.producers = append(c.producers, n)
	}
	for _, a := range []string{"ingest-a", "ingest-b", "ingest-c"} {
		c.consumers = append(c.consumers, s.Ingest(a))
	}
	for _, a := range []string{"gateway-a", "gateway-b", "gateway-c"} {
		c.gateways = append(c.gateways, s.service(img.gateway, a, map[string]string{
			"WAITQ_TICKET_SECRET":    ticketSecret,
			"WAITQ_STATUS_INTERVAL":  statusInterval.String(),
			"WAITQ_ADMIT_INTERVAL":   "250ms",
			"WAITQ_DISCONNECT_GRACE": disconnectGrace.String(), // a client reconnects within seconds
			"WAITQ_RATE":             "0",
			"WAITQ_CONNECT_RATE":     "0", // every client comes from one address
			"WAITQ_HOLD_RATE":        "0", // and every release and hold
		}))
	}
	for _, n := range c.services() {
		c.nodes[n.alias] = n
		_, addr := n.look(t.Context(), s.net.Name)
		c.addrs.Store(n.alias, addr)
	}
	c.rdb = redis.NewClient(&redis.Options{
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			ep, err := s.Redis.endpoint()
			if err != nil {
				return nil, err
			}
			var d net.Dialer
			return d.DialContext(ctx, network, ep)
		},
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 8,
	})
	t.Cleanup(func() { c.rdb.Close() })

	api := c.api(c.producers[0])
	c.main, c.drop, c.canary, c.arrive = "chaos-main", "chaos-drop", "chaos-canary", "chaos-arrive"
	c.events = []chaos.EventSpec{
		{ID: c.main, Capacity: 40, HoldMs: holdMs},
		{ID: c.drop, Capacity: 15, HoldMs: holdMs, OpensAt: time.Now().Add(30 * time.Second).UnixMilli()},
		{ID: c.canary, Capacity: 100000, HoldMs: 2000},
		{ID: c.arrive, Capacity: 40, HoldMs: arrivalHoldMs, ArrivalMs: arrivalMs},
	}
	partitions := map[string]int{c.main: 6, c.drop: 6, c.canary: 2, c.arrive: 3}
	for _, e := range c.events {
		body := fmt.Sprintf(`{"capacity":%d,"staySeconds":%d,"partitions":%d`, e.Capacity, e.HoldMs/1000, partitions[e.ID])
		if e.OpensAt > 0 {
			body += fmt.Sprintf(`,"opensAt":%d,"prequeueSeconds":3600`, e.OpensAt)
		}
		if e.ID == c.main {
			body += `,"maxItemsPerUser":1` // it sells seats: one a buyer
		}
		if e.ArrivalMs > 0 {
			body += fmt.Sprintf(`,"arrivalSeconds":%d`, e.ArrivalMs/1000)
		}
		api.CreateEvent(t, e.ID, body+"}")
	}
	c.shopToken, c.salesStart = c.readTokens(c.main).ShopToken, time.Now()
	c.holdsClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}

	v, err := entry.FetchJWKS(t.Context(), http.DefaultClient, c.gateways[0].URL()+"/.well-known/jwks.json")
	if err != nil {
		t.Fatalf("the gateway's keys: %v", err)
	}
	c.verifier = v
	c.shop = c.startShop()
	c.arrivals = c.startArrivalShop(c.readTokens(c.arrive).ReportToken)
	return c
}

func (c *campaign) services() []*node {
	return append(append(append([]*node(nil), c.producers...), c.consumers...), c.gateways...)
}

// targets are the containers the nemesis may fault.
func (c *campaign) targets() []chaos.Target {
	var ts []chaos.Target
	for role, ns := range map[chaos.Role][]*node{chaos.Producer: c.producers, chaos.Consumer: c.consumers, chaos.Gateway: c.gateways} {
		for _, n := range ns {
			ts = append(ts, chaos.Target{Name: n.alias, Role: role})
		}
	}
	ts = append(ts, chaos.Target{Name: "redis", Role: chaos.Redis}, chaos.Target{Name: "kafka", Role: chaos.Broker})
	// The plan draws from the targets in order: fix it.
	slices.SortFunc(ts, func(a, b chaos.Target) int { return strings.Compare(a.Name, b.Name) })
	return ts
}

// api is a client of producer-api n at its address now.
func (c *campaign) api(n *node) testclient.Producer {
	return testclient.Producer{Base: "http://" + c.addr(n.alias), AdminToken: adminToken}
}

// addr is where alias is reachable now, "" when it is not.
func (c *campaign) addr(alias string) string {
	a, _ := c.addrs.Load(alias)
	s, _ := a.(string)
	return s
}

// poll follows every service, each on its own so that one slow to answer
// (paused, cut off) delays no other's: where it answers, whether it is
// ready (and why not); and how much the consumers fetched.
func (c *campaign) poll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range c.services() {
		wg.Go(func() { c.follow(ctx, n) })
	}
	hc := &http.Client{Timeout: 500 * time.Millisecond}
	for ctx.Err() == nil {
		for _, n := range c.consumers {
			c.scrapeFetched(ctx, hc, n)
		}
		clock.Sleep(ctx, 500*time.Millisecond)
	}
	wg.Wait()
}

// follow polls one service until ctx ends: its container's state and
// address every 500 ms (the address moves when it rejoins the network),
// its readiness every 250 ms, each change of either recorded.
//
// The campaign reaches the services at their addresses on the stack's
// network, not through their published ports: Docker's userland proxy
// behind a published port holds two descriptors per connection until the
// container answers, and exits for good when it runs out (20,000 here),
// which a reconnect storm against a paused or cut-off gateway does within
// seconds; the port then refuses every connection while the container
// runs, until it starts again.
func (c *campaign) follow(ctx context.Context, n *node) {
	hc := &http.Client{Timeout: 500 * time.Millisecond}
	var was chaos.Ready
	state := "running"
	for i := 0; ctx.Err() == nil; i++ {
		if i%2 == 0 {
			var addr string
			state, addr = n.look(ctx, c.s.net.Name)
			c.addrs.Store(n.alias, addr)
		}
		why := state
		switch a := c.addr(n.alias); {
		case state != "running":
		case a == "":
			why = "not on the network"
		default:
			why = readyzAnswer(ctx, hc, a)
		}
		if i == 0 || was.Why != why {
			was = chaos.Ready{Target: n.alias, At: time.Now(), OK: why == "", Why: why}
			c.h.AddReady(was)
		}
		clock.Sleep(ctx, 250*time.Millisecond)
	}
}

func (c *campaign) scrapeFetched(ctx context.Context, hc *http.Client, n *node) {
	a := c.addr(n.alias)
	if a == "" {
		return
	}
	m, err := promtext.Scrape(ctx, hc, "http://"+a+"/metrics")
	if err != nil {
		return
	}
	v := m["waitq_ingest_fetched_total"]
	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()
	f := c.fetched[n.alias]
	if v != f.value { // more fetched, or fewer: the consumer started again
		c.fetched[n.alias] = fetchState{value: v, increased: time.Now()}
	}
}

// groupSettled reports whether every consumer not under a fault fetched in
// the last 2 s: the group is not rebalancing. The nemesis faults a consumer
// only then: kfake (the test broker) keeps a member that dies in the middle
// of joining the group forever, with its partitions, where Apache Kafka
// times it out.
func (c *campaign) groupSettled() bool {
	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()
	for _, n := range c.consumers {
		if _, f := c.faulted.Load(n.alias); f {
			continue
		}
		st := c.fetched[n.alias]
		if st.value == 0 || time.Since(st.increased) > 2*time.Second {
			return false
		}
	}
	return true
}

// sampled are the events whose holders and lines the samplers read.
func (c *campaign) sampled() []string { return []string{c.main, c.drop, c.arrive} }

// sampleHolders reads the holders of the sampled events every 5 ms.
func (c *campaign) sampleHolders(ctx context.Context) {
	events := c.sampled()
	for ctx.Err() == nil {
		p := c.rdb.Pipeline()
		ns := make([]*redis.IntCmd, len(events))
		for i, ev := range events {
			ns[i] = p.ZCard(ctx, redisstore.HoldersKey(ev))
		}
		sent := time.Now()
		if _, err := p.Exec(ctx); err == nil {
			now := time.Now()
			for i, ev := range events {
				c.h.AddHolders(chaos.Holders{Event: ev, Sent: sent, At: now, N: ns[i].Val()})
			}
		}
		clock.Sleep(ctx, 5*time.Millisecond)
	}
}

// sampleLines reads the sampled events' waiting lines and admission
// counters, and the arrival event's released list, every 200 ms.
func (c *campaign) sampleLines(ctx context.Context) {
	for ctx.Err() == nil {
		c.sampleFreed(ctx)
		for _, ev := range c.sampled() {
			sent := time.Now()
			if n, err := c.rdb.HGet(ctx, redisstore.StatsKey(ev), "admittedTotal").Int64(); err == nil || errors.Is(err, redis.Nil) {
				c.h.AddCount(chaos.AdmittedCount{Event: ev, Sent: sent, At: time.Now(), Total: n})
			}
			sent = time.Now()
			members, err := c.line(ctx, ev)
			if err != nil {
				continue
			}
			c.h.AddLine(chaos.Line{Event: ev, Sent: sent, Got: time.Now(), Members: members})
		}
		clock.Sleep(ctx, 200*time.Millisecond)
	}
}

// line reads event's waiting line: each user at their score.
func (c *campaign) line(ctx context.Context, event string) ([]chaos.Placed, error) {
	zs, err := c.rdb.ZRangeWithScores(ctx, redisstore.WaitingKey(event), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	members := make([]chaos.Placed, len(zs))
	for i, z := range zs {
		members[i] = chaos.Placed{User: z.Member.(string), Score: int64(z.Score)}
	}
	return members, nil
}

// canaries send a probe join every 500 ms through either producer-api and
// wait for it in Redis: the recovery of each fault is measured by them.
func (c *campaign) canaries(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := 0; ctx.Err() == nil; i++ {
		user := fmt.Sprintf("canary-%05d", i)
		p := c.producers[i%len(c.producers)]
		wg.Go(func() {
			cn := chaos.Canary{Sent: time.Now()}
			defer func() { c.h.AddCanary(cn) }()
			jctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			j, ref, err := c.api(p).Join(jctx, c.canary, user)
			cancel()
			c.h.AddJoin(joinRecord(c.canary, user, cn.Sent, j.JoinedAt, ref, err))
			if err != nil || ref != nil {
				return
			}
			cn.Acked = time.Now()
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				pipe := c.rdb.Pipeline()
				a := pipe.ZScore(context.Background(), redisstore.HoldersKey(c.canary), user)
				w := pipe.ZScore(context.Background(), redisstore.WaitingKey(c.canary), user)
				sv := pipe.ZScore(context.Background(), redisstore.ServedKey(c.canary), user)
				_, _ = pipe.Exec(context.Background())
				if a.Err() == nil || w.Err() == nil || sv.Err() == nil {
					cn.Seen = time.Now()
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
		clock.Sleep(ctx, 500*time.Millisecond)
	}
}

// checkConfig is what the checker needs: the events, and what Redis holds
// now that the line drained.
func (c *campaign) checkConfig() chaos.Config {
	t := c.t
	ctx := context.Background()
	away := queue.DefaultAway()
	cfg := chaos.Config{GapLimit: gapLimit, FaultGrace: faultGrace, Final: map[string]chaos.Final{},
		Grace:       time.Duration(away.KeepSeconds) * time.Second,
		ClaimWindow: time.Duration(away.ClaimSeconds) * time.Second,
		TokenSkew:   2 * time.Second, ReleasedGrace: releasedGrace}
	var pub struct {
		Draw struct{ Seed string }
	}
	getJSON(t, "http://"+c.addr(c.producers[0].alias)+"/v1/events/"+c.drop, &pub)
	if pub.Draw.Seed == "" {
		t.Errorf("the drop's seed is not revealed after its opening")
	}
	cfg.Events = slices.Clone(c.events)
	for i, e := range cfg.Events {
		if e.ID == c.drop {
			cfg.Events[i].Seed = pub.Draw.Seed
		}
		var f chaos.Final
		var err error
		if f.Waiting, err = c.line(ctx, e.ID); err != nil {
			t.Fatalf("read the line of %s: %v", e.ID, err)
		}
		if f.Holders, err = c.rdb.ZRange(ctx, redisstore.HoldersKey(e.ID), 0, -1).Result(); err != nil {
			t.Fatal(err)
		}
		served, err := c.rdb.ZRangeWithScores(ctx, redisstore.ServedKey(e.ID), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		f.Served = map[string]int64{}
		for _, z := range served {
			f.Served[z.Member.(string)] = int64(z.Score)
		}
		if f.AdmittedTotal, err = c.rdb.HGet(ctx, redisstore.StatsKey(e.ID), "admittedTotal").Int64(); err != nil {
			t.Fatal(err)
		}
		if f.Sold, err = c.soldItems(ctx, e.ID); err != nil {
			t.Fatalf("read the items sold of %s: %v", e.ID, err)
		}
		c.untoldMu.Lock()
		f.Untold = c.untold[e.ID]
		c.untoldMu.Unlock()
		cfg.Final[e.ID] = f
	}
	// Where Redis has the clients the drain left following.
	for _, u := range c.h.Unfinished {
		f := cfg.Final[u.Event]
		served, ok := f.Served[u.User]
		t.Logf("still following: %s/%s: served %v (mark %d), holding %v, waiting %v", u.Event, u.User, ok, served,
			slices.Contains(f.Holders, u.User), slices.ContainsFunc(f.Waiting, func(p chaos.Placed) bool { return p.User == u.User }))
	}
	return cfg
}

func envInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		t.Fatalf("%s: %q is not a whole number", name, v)
	}
	return n
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 20*time.Second {
		t.Fatalf("%s: %q is not a duration of at least 20s", name, v)
	}
	return d
}

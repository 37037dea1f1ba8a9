package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/tools/loadgen/latency"
)

// RunSale simulates a whole sale in the Redis given (issue 30): -joins
// people join one event through the ingest path (Store.Ingest, -batch a
// call, a few calls under way) as fast as it takes them; each, once in
// line, connects to one of -gateways simulated gateways (no sockets: each
// gateway's greeting, then status rounds every -interval over its 16
// slices, through its own gateway.Rounds, as ws-gateway's), while a slot
// monitor ticks every 250 ms (Store.Tick) and admits at -rate a minute.
// Each admitted person leaves their gateway (their presence let go). It
// prints the joins' rate and join → in line p99, the gap between a
// waiting person's statuses, the Redis CPU over the sale, and whether the
// line drained with nothing lost. The event is deleted at the end.
func RunSale(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg saleConfig
	if ok, err := parseFlags("sale", &cfg, args, stderr); !ok {
		return err
	}
	store, closeStore, err := openStore(redisstore.Conn{URL: cfg.redisURL})
	if err != nil {
		return err
	}
	defer closeStore()
	res, err := runSale(ctx, store, cfg, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, res)
	return nil
}

// saleUser is a person followed by a simulated gateway.
type saleUser struct {
	id    string
	stamp int64     // the join's stamp (unix ms)
	last  time.Time // their last status (zero: none yet)
	pos   int64     // its position
	slice int
}

// saleGateway is one simulated gateway: its rounds, its people by slice
// and the newly connected ones to greet.
type saleGateway struct {
	rounds *gateway.Rounds
	mu     sync.Mutex
	fresh  []*saleUser
	slices []map[string]*saleUser
	left   atomic.Int64 // people still followed or to greet
}

// saleTally is what the gateways measure.
type saleTally struct {
	inLine, firstTold, gap, read latency.Hist
	statuses, admitted, rises    atomic.Int64
}

func runSale(ctx context.Context, store *redisstore.Store, cfg saleConfig, stderr io.Writer) (res saleResult, err error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	ev, run := newRun("sale")
	res.joins, res.gateways = cfg.joins, cfg.gateways
	node, err := eventNode(ctx, store.Client(), ev)
	if err != nil {
		return res, err
	}
	e := queue.Event{ID: ev, Capacity: cfg.joins, StaySeconds: 1, AdmitPerMinute: cfg.rate, State: queue.StateOpen, Partitions: 1}
	if _, err := store.PutEvent(ctx, e); err != nil {
		return res, err
	}
	defer func() {
		time.Sleep(1100 * time.Millisecond) // the last holds end
		if derr := deleteStatusesEvent(store, ev); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	gws := make([]*saleGateway, cfg.gateways)
	for i := range gws {
		r := gateway.NewRounds(store, true)
		gws[i] = &saleGateway{rounds: r, slices: make([]map[string]*saleUser, r.Slices())}
		for j := range gws[i].slices {
			gws[i].slices[j] = map[string]*saleUser{}
		}
	}
	var t saleTally
	cpu0, err := serverCPU(ctx, node)
	if err != nil {
		return res, err
	}
	start := time.Now()
	fmt.Fprintf(stderr, "sale: event %s, %s\n", ev, cfg.line())

	var wg sync.WaitGroup
	loops, stopLoops := context.WithCancel(ctx)
	defer stopLoops()
	for _, g := range gws {
		wg.Go(func() { g.greetLoop(loops, ev, cfg, &t) })
		wg.Go(func() { g.roundLoop(loops, ev, cfg, &t) })
		wg.Go(func() { // presences let go once a second, as ws-gateway's letGo
			for clock.Sleep(loops, time.Second) {
				_ = g.rounds.Flush(loops, time.Now().UnixMilli())
			}
		})
	}
	wg.Go(func() { saleMonitor(loops, store, ev) })
	joinErr := saleJoins(ctx, store, cfg, ev, run, gws, &t, stderr)
	res.joinWall = time.Since(start)
	fmt.Fprintf(stderr, "sale: %d joins in %.1fs\n", cfg.joins, res.joinWall.Seconds())
	for joinErr == nil && ctx.Err() == nil {
		left := int64(0)
		for _, g := range gws {
			left += g.left.Load()
		}
		if left == 0 {
			break
		}
		fmt.Fprintf(stderr, "sale: %.0fs, %d people still waiting, %d told admitted\n", time.Since(start).Seconds(), left, t.admitted.Load())
		clock.Sleep(ctx, 5*time.Second)
	}
	stopLoops()
	wg.Wait()
	res.wall = time.Since(start)
	if joinErr != nil {
		return res, joinErr
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("the sale did not drain within -timeout %s: %w", cfg.timeout, err)
	}
	cpu1, err := serverCPU(context.Background(), node)
	if err != nil {
		return res, err
	}
	res.redisCPU = cpu1 - cpu0
	rdb := store.Client()
	bg := context.Background()
	res.waitingLeft, _ = rdb.ZCard(bg, redisstore.WaitingKey(ev)).Result()
	served, _ := rdb.ZCard(bg, redisstore.ServedKey(ev)).Result()
	res.admittedTotal, _ = rdb.HGet(bg, redisstore.StatsKey(ev), "admittedTotal").Int64()
	res.lost = int64(cfg.joins) - served - res.waitingLeft
	res.inLineP99, res.firstToldP99 = t.inLine.Percentile(0.99), t.firstTold.Percentile(0.99)
	res.gapP99, res.gapMax, res.readP99 = t.gap.Percentile(0.99), t.gap.Max(), t.read.Percentile(0.99)
	res.statuses, res.admitted, res.rises = t.statuses.Load(), t.admitted.Load(), t.rises.Load()
	return res, nil
}

// saleJoins puts cfg.joins people in line through Store.Ingest, each batch
// stamped as it is sent, and hands each person, once in line, to a gateway.
func saleJoins(ctx context.Context, store *redisstore.Store, cfg saleConfig, ev string, run uint64, gws []*saleGateway, t *saleTally, stderr io.Writer) error {
	return ingestJoins(ctx, store, cfg.joins, cfg.batch, cfg.timeout,
		func(i int, made int64) queue.Message { return statusesJoin(ev, run, i, made-int64(i)) },
		func(from int, msgs []queue.Message, stamp int64) {
			inLine := time.Now()
			for k, m := range msgs {
				t.inLine.Record(inLine.UnixMicro() - stamp*1000)
				gws[(from+k)%len(gws)].connect(&saleUser{id: m.UserID, stamp: stamp})
			}
			if n := from + len(msgs); n/200_000 != from/200_000 {
				fmt.Fprintf(stderr, "sale: %d joined\n", n)
			}
		})
}

func (g *saleGateway) connect(u *saleUser) {
	g.left.Add(1)
	g.mu.Lock()
	g.fresh = append(g.fresh, u)
	g.mu.Unlock()
}

// greetLoop reads the newly connected every 20 ms, as a gateway greets
// new sockets, and hands them to their slices.
func (g *saleGateway) greetLoop(ctx context.Context, ev string, cfg saleConfig, t *saleTally) {
	for clock.Sleep(ctx, 20*time.Millisecond) {
		g.mu.Lock()
		fresh := g.fresh
		g.fresh = nil
		g.mu.Unlock()
		if len(fresh) == 0 {
			continue
		}
		for _, u := range fresh {
			u.slice = g.rounds.Slice(ev, u.id)
		}
		g.read(ctx, ev, cfg, t, fresh, true)
	}
}

// roundLoop runs a status round every cfg.interval, its slices spread
// over three quarters of it, as ws-gateway's.
func (g *saleGateway) roundLoop(ctx context.Context, ev string, cfg saleConfig, t *saleTally) {
	for clock.Sleep(ctx, cfg.interval) {
		g.rounds.Run(ctx, cfg.interval*3/4, func(j int) {
			g.mu.Lock()
			us := make([]*saleUser, 0, len(g.slices[j]))
			for _, u := range g.slices[j] {
				us = append(us, u)
			}
			g.mu.Unlock()
			if len(us) > 0 {
				g.read(ctx, ev, cfg, t, us, false)
			}
		})
	}
}

// read reads the places of us through the gateway's rounds (Rounds.Read),
// and tallies them: a waiting person's gap since their last status
// and whether their position went up; an admitted one leaves. A read that
// fails is read again: the next round reads a slice's people, the next
// greeting (greeting: us are not in a slice yet) the newly connected.
func (g *saleGateway) read(ctx context.Context, ev string, cfg saleConfig, t *saleTally, us []*saleUser, greeting bool) {
	ids := make([]string, len(us))
	for i, u := range us {
		ids[i] = u.id
	}
	begin := time.Now()
	b, _, err := g.rounds.Read(ctx, ev, ids, cfg.interval)
	if err != nil {
		if greeting { // in no slice yet: lost to every round
			g.mu.Lock()
			g.fresh = append(g.fresh, us...)
			g.mu.Unlock()
		}
		return
	}
	now := time.Now()
	t.read.Record(now.Sub(begin).Microseconds())
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, u := range us {
		p := b.Places[i]
		t.statuses.Add(1)
		switch {
		case p.StayUntil >= 0: // holding, or held already (holds last a second)
			t.admitted.Add(1)
			delete(g.slices[u.slice], u.id)
			g.rounds.Leave(ev, u.id)
			g.left.Add(-1)
		case p.Rank >= 0:
			if u.last.IsZero() {
				t.firstTold.Record(now.UnixMicro() - u.stamp*1000)
				g.slices[u.slice][u.id] = u
			} else {
				t.gap.Record(now.Sub(u.last).Microseconds())
				if p.Rank+1 > u.pos {
					t.rises.Add(1)
				}
			}
			u.last, u.pos = now, p.Rank+1
		default: // not in line yet, or no longer: read again (a person lost keeps the sale from draining)
			delete(g.slices[u.slice], u.id)
			g.fresh = append(g.fresh, u)
		}
	}
}

// saleMonitor ticks every 250 ms, as a gateway's slot monitor: holds end,
// the rate admits.
func saleMonitor(ctx context.Context, store *redisstore.Store, ev string) {
	for clock.Sleep(ctx, 250*time.Millisecond) {
		now := time.Now().UnixMilli()
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _ = store.Tick(tctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: now, AdmitBatch: 100_000, PresenceCutoffMs: now - 30_000, SweepLimit: 1000})
		cancel()
	}
}

// Bounds of "loadgen sale".
const (
	maxSaleJoins    = 20_000_000
	maxSaleGateways = 64
	maxSaleTimeout  = time.Hour
)

// saleConfig are the settings of "loadgen sale".
type saleConfig struct {
	shown
	redisURL string
	joins    int
	gateways int
	rate     int           // admissions a minute
	interval time.Duration // the gateways' status interval
	batch    int           // joins per Store.Ingest call
	timeout  time.Duration
}

// bind declares the sale flags.
func (c *saleConfig) bind(s *settings) {
	s.redis(&c.redisURL, "to run the sale in", "the Redis to run the sale in, redis://HOST:PORT/0 (required)", func() redisstore.Conn { return redisstore.Conn{URL: c.redisURL} })
	s.intVar(&c.joins, "joins", 1_000_000, 1, maxSaleJoins, fmt.Sprintf("people who join the one event, as fast as the ingest path takes them (1 to %d)", maxSaleJoins))
	s.intVar(&c.gateways, "gateways", 4, 1, maxSaleGateways, fmt.Sprintf("simulated gateways sharing the people's sockets, each with its own status rounds (1 to %d)", maxSaleGateways))
	s.fs.IntVar(&c.rate, "rate", 600_000, "admissions a minute (the event's admitPerMinute)")
	s.show("rate")
	s.check(func() error {
		if c.rate < 1 {
			return fmt.Errorf("-rate %d: must be at least 1", c.rate)
		}
		return nil
	})
	s.durVar(&c.interval, "interval", 5*time.Second, "100ms", "1m", "the gateways' status interval (WAITQ_STATUS_INTERVAL)")
	s.intVar(&c.batch, "batch", 500, 1, maxIngestBatch, "joins per Store.Ingest call (the ingest consumer's default MaxBatch)")
	s.durMax(&c.timeout, "timeout", 20*time.Minute, maxSaleTimeout, "the longest the sale may take, drain included")
}

// saleResult is what one sale measured.
type saleResult struct {
	joins, gateways         int
	joinWall, wall          time.Duration // the joins' wall time; the whole sale's, drain included
	redisCPU                time.Duration
	inLineP99, firstToldP99 time.Duration // join stamp → in Redis; → first status with a place
	gapP99, gapMax          time.Duration // between two statuses of a waiting user
	readP99                 time.Duration // a slice's read
	statuses                int64
	admitted, admittedTotal int64 // told admitted; the event's counter
	waitingLeft, lost       int64
	rises                   int64 // statuses whose position was above the user's previous one: someone joined ahead (a stamp equal or earlier)
}

// String is the sale's report.
func (r saleResult) String() string {
	drained := "yes"
	if r.waitingLeft > 0 || r.lost > 0 || r.admittedTotal != int64(r.joins) {
		drained = "NO"
	}
	return fmt.Sprintf(`sale: joins=%d gateways=%d
  joins: %.0f/s over %.1fs; join → in line p99 %s; join → first status with a place p99 %s
  statuses: %d; gap between a waiting user's statuses p99 %s (max %s); a slice's read p99 %s; positions that went up (a join stamped at or before theirs came in ahead) %d
  Redis: %.1f%% of one core over the sale (%.1fs of CPU in %.1fs)
  drained: %s (admittedTotal %d, told admitted %d, still waiting %d, joins neither admitted nor waiting %d)`,
		r.joins, r.gateways,
		float64(r.joins)/r.joinWall.Seconds(), r.joinWall.Seconds(), r.inLineP99, r.firstToldP99,
		r.statuses, r.gapP99, r.gapMax, r.readP99, r.rises,
		100*r.redisCPU.Seconds()/r.wall.Seconds(), r.redisCPU.Seconds(), r.wall.Seconds(),
		drained, r.admittedTotal, r.admitted, r.waitingLeft, r.lost)
}

package loadgen

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/tools/loadgen/latency"
)

// RunSale simulates a whole sale in the Redis given (issue 30): -joins
// people loaded into one event's line, each then followed by one of
// -gateways simulated gateways while a slot monitor admits -rate a minute,
// until the line drained; docs/performance.md tells what it reports.
func RunSale(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg saleConfig
	if ok, err := parseFlags("sale", &cfg, args, stderr); !ok {
		return err
	}
	return simulate(redisstore.Conn{URL: cfg.redisURL}, "sale", false, stdout, stderr, func(ev *simEvent) (fmt.Stringer, error) {
		s := &sale{simEvent: ev, cfg: cfg, people: make([]salePerson, cfg.joins)}
		return s, s.run(ctx)
	})
}

// sale is one simulated sale and what it measured.
type sale struct {
	*simEvent
	cfg                          saleConfig
	people                       []salePerson // by number; each guarded by its gateway's mu
	inLine, firstTold, gap, read latency.Hist
	statuses, admitted, rises    atomic.Int64
	joinWall, wall, redisCPU     time.Duration // the joins' wall time; the whole sale's, drain included; Redis's CPU over it
	admittedTotal, waitingLeft   int64         // the event's counter; still in line at the end
	lost                         int64         // joins neither served nor waiting
}

// salePerson is what a gateway knows of one person.
type salePerson struct {
	stamp int64 // the join's stamp (unix ms)
	last  int64 // their last status (unix µs; 0: none yet)
	pos   int64 // their last position (-1: gone from their gateway's slices)
}

// saleGateway is one simulated gateway and the newly connected it is to
// greet (guarded by mu).
type saleGateway struct {
	*simGateway
	fresh []uint32
}

// run runs the sale: the event made, the joins, the gateways and the slot
// monitor until every person was told they are admitted.
func (s *sale) run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	node, err := eventNode(ctx, s.store.Client(), s.id)
	if err != nil {
		return err
	}
	if _, err := s.store.PutEvent(ctx, queue.Event{ID: s.id, Capacity: s.cfg.joins, StaySeconds: 1, AdmitPerMinute: s.cfg.rate, State: queue.StateOpen, Partitions: 1}); err != nil {
		return err
	}
	defer time.Sleep(1100 * time.Millisecond) // the last holds end before the event is deleted
	cpu0, err := serverCPU(ctx, node)
	if err != nil {
		return err
	}
	start := time.Now()
	s.logf("event %s, %s", s.id, s.cfg.line())
	var wg sync.WaitGroup
	loops, stopLoops := context.WithCancel(ctx)
	defer stopLoops()
	gws := make([]*saleGateway, s.cfg.gateways)
	for i := range gws {
		gws[i] = &saleGateway{simGateway: s.gateway(true, s.cfg.interval)}
	}
	s.startLoops(loops, &wg, gws)
	joinErr := s.load(ctx, s.cfg.joins, s.cfg.batch, s.cfg.timeout, func(_ int, made int64) int64 { return made },
		func(from, to int, made int64) { // each person, once in line, connects to a gateway
			inLine := time.Now().UnixMicro()
			for i := from; i < to; i++ {
				s.inLine.Record(inLine - made*1000)
				g := gws[i%len(gws)]
				g.mu.Lock()
				s.people[i].stamp = made
				g.fresh = append(g.fresh, uint32(i))
				g.mu.Unlock()
			}
		})
	s.joinWall = time.Since(start)
	for left := int64(s.cfg.joins); joinErr == nil && ctx.Err() == nil && left > 0; left = int64(s.cfg.joins) - s.admitted.Load() {
		s.logf("%.0fs, %d people still waiting, %d told admitted", time.Since(start).Seconds(), left, s.admitted.Load())
		clock.Sleep(ctx, 5*time.Second)
	}
	stopLoops()
	wg.Wait()
	s.wall = time.Since(start)
	if joinErr != nil {
		return joinErr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("the sale did not drain within -timeout %s: %w", s.cfg.timeout, err)
	}
	cpu1, err := serverCPU(context.Background(), node)
	if err != nil {
		return err
	}
	s.redisCPU = cpu1 - cpu0
	rdb, bg := s.store.Client(), context.Background()
	s.waitingLeft, _ = rdb.ZCard(bg, redisstore.WaitingKey(s.id)).Result()
	served, _ := rdb.ZCard(bg, redisstore.ServedKey(s.id)).Result()
	s.admittedTotal, _ = rdb.HGet(bg, redisstore.StatsKey(s.id), "admittedTotal").Int64()
	s.lost = int64(s.cfg.joins) - served - s.waitingLeft
	return nil
}

// startLoops starts in wg, until ctx ends, each gateway's loops as
// ws-gateway's: the newly connected greeted every 20 ms, a status round
// every interval (its slices spread over three quarters of it), presences
// let go once a second; and a slot monitor's tick every 250 ms: holds end,
// the rate admits.
func (s *sale) startLoops(ctx context.Context, wg *sync.WaitGroup, gws []*saleGateway) {
	every := func(d time.Duration, f func()) {
		wg.Go(func() {
			for clock.Sleep(ctx, d) {
				f()
			}
		})
	}
	for _, g := range gws {
		every(20*time.Millisecond, func() {
			g.mu.Lock()
			fresh := g.fresh
			g.fresh = nil
			g.mu.Unlock()
			if len(fresh) > 0 {
				s.tell(ctx, g, fresh, -1)
			}
		})
		every(s.cfg.interval, func() {
			g.round(ctx, s.cfg.interval*3/4, func(j int, nums []uint32) {
				if len(nums) > 0 {
					s.tell(ctx, g, nums, j)
				}
			})
		})
		every(time.Second, func() { _ = g.rounds.Flush(ctx, time.Now().UnixMilli()) })
	}
	every(250*time.Millisecond, func() {
		now := time.Now().UnixMilli()
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, _ = s.store.Tick(tctx, queue.TickRequest{EventIDs: []string{s.id}, NowMs: now, AdmitBatch: 100_000, PresenceCutoffMs: now - 30_000, SweepLimit: 1000})
	})
}

// tell reads the places of the people numbered nums, of slice j of g's
// rounds (-1: those g greets), and tallies what each is told: a waiting
// person's gap since their last status and whether their position went
// up; one admitted leaves g; one not in line (yet, or any more) is greeted
// again, so a person lost keeps the sale from draining. A read that fails
// is read again: by the next round, or greeting.
func (s *sale) tell(ctx context.Context, g *saleGateway, nums []uint32, j int) {
	begin := time.Now()
	places, err := g.read(ctx, nums)
	if err != nil {
		if j < 0 { // in no slice yet: lost to every round
			g.mu.Lock()
			g.fresh = append(g.fresh, nums...)
			g.mu.Unlock()
		}
		return
	}
	now := time.Now().UnixMicro()
	s.read.Record(now - begin.UnixMicro())
	var told []uint32 // first told a place: to their slice
	g.mu.Lock()
	for k, n := range nums {
		p, u := places[k], &s.people[n]
		s.statuses.Add(1)
		switch {
		case p.StayUntil >= 0: // holding, or held already (holds last a second)
			s.admitted.Add(1)
			g.rounds.Leave(s.id, s.user(int(n)))
			u.pos = -1
		case p.Rank >= 0 && u.last == 0:
			s.firstTold.Record(now - u.stamp*1000)
			told = append(told, n)
			u.last, u.pos = now, p.Rank+1
		case p.Rank >= 0:
			s.gap.Record(now - u.last)
			if p.Rank+1 > u.pos {
				s.rises.Add(1)
			}
			u.last, u.pos = now, p.Rank+1
		default:
			u.last, u.pos = 0, -1
			g.fresh = append(g.fresh, n)
		}
	}
	if j >= 0 {
		g.slices[j] = slices.DeleteFunc(g.slices[j], func(n uint32) bool { return s.people[n].pos < 0 })
	}
	g.mu.Unlock()
	g.follow(told...)
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

// String is the sale's report.
func (s *sale) String() string {
	drained := "yes"
	if s.waitingLeft > 0 || s.lost > 0 || s.admittedTotal != int64(s.cfg.joins) {
		drained = "NO"
	}
	return fmt.Sprintf(`sale: joins=%d gateways=%d
  joins: %.0f/s over %.1fs; join → in line p99 %s; join → first status with a place p99 %s
  statuses: %d; gap between a waiting user's statuses p99 %s (max %s); a slice's read p99 %s; positions that went up (a join stamped at or before theirs came in ahead) %d
  Redis: %.1f%% of one core over the sale (%.1fs of CPU in %.1fs)
  drained: %s (admittedTotal %d, told admitted %d, still waiting %d, joins neither admitted nor waiting %d)`,
		s.cfg.joins, s.cfg.gateways,
		float64(s.cfg.joins)/s.joinWall.Seconds(), s.joinWall.Seconds(), s.inLine.Percentile(0.99), s.firstTold.Percentile(0.99),
		s.statuses.Load(), s.gap.Percentile(0.99), s.gap.Max(), s.read.Percentile(0.99), s.rises.Load(),
		100*s.redisCPU.Seconds()/s.wall.Seconds(), s.redisCPU.Seconds(), s.wall.Seconds(),
		drained, s.admittedTotal, s.admitted.Load(), s.waitingLeft, s.lost)
}

package loadgen

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
)

// RunTurns simulates a sale in which people step away (issue 47), in
// simulated time against the Redis given, through the product's own steps
// (the store's, gateway.Teller's frames) with the simulated clock as their
// now; docs/performance.md tells what it reports.
func RunTurns(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg turnsConfig
	if ok, err := begin("turns", &cfg, args, stdout, stderr); !ok {
		return err
	}
	return simulate(redisstore.Conn{URL: cfg.redisURL}, "turns", false, stdout, stderr, func(s *simEvent) (fmt.Stringer, error) {
		return runTurns(ctx, s, cfg)
	})
}

// turnsConfig are the settings of "loadgen turns".
type turnsConfig struct {
	shown
	redisURL                string
	people, capacity        int
	stay, arrival           time.Duration
	keep, claim             time.Duration
	awayPct, gonePct, nsPct int
	seed                    int64
	timeout                 time.Duration
}

// bind declares the turns flags.
func (c *turnsConfig) bind(s *settings) {
	s.redis(&c.redisURL, "to run the sale in", "the Redis to run the simulated sale in, redis://HOST:PORT/0 (required)", func() redisstore.Conn { return redisstore.Conn{URL: c.redisURL} })
	s.intVar(&c.people, "people", 3000, 10, 100_000, "people who join in the sale's first minute (10 to 100000)")
	s.intVar(&c.capacity, "capacity", 100, 1, 10_000, "the event's capacity: buyers in the shop at once (1 to 10000)")
	s.durVar(&c.stay, "stay", 5*time.Minute, "1m", "1h", "the event's staySeconds: how long an admitted buyer may stay")
	s.durVar(&c.keep, "keep", 30*time.Minute, "1m", "12h", "the event's away.keepSeconds")
	s.durVar(&c.claim, "claim", 10*time.Minute, "1m", "2h", "the event's away.claimSeconds: the claim window")
	s.durVar(&c.arrival, "arrival", time.Minute, "0s", "1h", "the event's arrivalSeconds: a buyer not in the shop by then frees the slot (0: off)")
	s.intVar(&c.awayPct, "away", 30, 0, 100, "percent of the people who step away once, for 1 to 15 minutes")
	s.intVar(&c.gonePct, "gone", 10, 0, 100, "percent of the people who close the page for good")
	s.intVar(&c.nsPct, "noshow", 20, 0, 100, "percent of the admitted who never reach the shop")
	s.int64Var(&c.seed, "seed", 1, 0, 1<<62, "the simulation's random seed")
	s.durMax(&c.timeout, "timeout", 10*time.Minute, time.Hour, "the longest the simulation may take in wall time")
	s.check(func() error {
		if c.awayPct+c.gonePct > 100 {
			return fmt.Errorf("-away %d and -gone %d: more than 100 percent", c.awayPct, c.gonePct)
		}
		return nil
	})
}

// Simulated times of "loadgen turns".
const (
	turnsStep       = time.Second      // the simulated clock's step: a monitor tick each
	turnsPoll       = 5 * time.Second  // a page's poll
	turnsGrace      = 30 * time.Second // the disconnect grace
	turnsJoinSpread = time.Minute      // everyone joins within it
	turnsMinWait    = 30 * time.Second // waits shorter than this are left out of the estimate's error
	turnsHorizon    = 24 * time.Hour   // the longest simulated sale
	turnsETAEvery   = 2 * time.Minute  // how often a waiting person's estimate is sampled
)

// turnsPerson is one simulated person.
type turnsPerson struct {
	id                   string
	awayFrom, awayTo     int64 // when the page is closed (ms; 0: never)
	goneAt               int64 // when the page closes for good (0: never)
	noShow               bool  // admitted, never reaches the shop
	shopFor, arriveAfter int64 // how long they take to reach the shop once admitted, and to shop (ms)
	stayUntil            int64 // the end of their stay (ms)
	toldAt               int64 // the first status with a place
	etas                 []turnsETA
	admittedAt, leaveAt  int64
	inShop               bool
	backInWindow         bool // came back while their turn was called
	done                 bool
}

// turnsETA is an estimate a person was told (etaSeconds, in ms) at a time.
type turnsETA struct {
	at, eta int64
	settled bool // told once the slots had turned over twice (admitted ≥ 2 × capacity)
}

// turnsSim is one simulated sale: its state, then what it measured.
type turnsSim struct {
	*simEvent
	cfg                     turnsConfig
	teller                  *gateway.Teller
	e                       queue.Event
	people                  []*turnsPerson
	byID                    map[string]*turnsPerson
	rng                     *rand.Rand
	inShop                  int // buyers in the shop
	simulated, wall         time.Duration
	called, lapsed, swept   int
	admitted, noShows, lost int
	occupancy               []float64 // in the shop ÷ capacity, each second people waited
	etaErr                  []float64 // |actual − estimate| ÷ actual of each estimate sampled
	etaSettled              []float64 // of them, those told once the slots had turned over twice
}

// runTurns runs the simulated sale in s's event.
func runTurns(ctx context.Context, s *simEvent, cfg turnsConfig) (*turnsSim, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	sim := &turnsSim{simEvent: s, cfg: cfg, teller: gateway.NewTeller(), byID: map[string]*turnsPerson{},
		rng: rand.New(rand.NewPCG(uint64(cfg.seed), s.run))}
	sim.e = queue.Event{ID: s.id, Capacity: cfg.capacity, StaySeconds: int(cfg.stay / time.Second), State: queue.StateOpen, Partitions: 1,
		Away: queue.Away{KeepSeconds: int(cfg.keep / time.Second), ClaimSeconds: int(cfg.claim / time.Second)}, ArrivalSeconds: int(cfg.arrival / time.Second)}
	if _, err := s.store.PutEvent(ctx, sim.e); err != nil {
		return nil, err
	}
	start := time.Now()
	t0 := start.UnixMilli()
	sim.plan(t0)
	s.logf("event %s, %s", s.id, cfg.line())
	for now := t0; sim.simulated == 0; now += turnsStep.Milliseconds() {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("the simulation did not end within -timeout %s: %w", cfg.timeout, err)
		}
		if err := sim.step(ctx, now-t0, now); err != nil {
			return nil, err
		}
		switch left := sim.left(); {
		case left == "":
			sim.simulated = time.Duration(now-t0) * time.Millisecond
		case now-t0 > turnsHorizon.Milliseconds():
			return nil, fmt.Errorf("the simulated sale did not end within %s: %s", turnsHorizon, left)
		case (now-t0)%(10*time.Minute).Milliseconds() == 0:
			s.logf("%s simulated, %s", time.Duration(now-t0)*time.Millisecond, left)
		}
	}
	sim.etaErrors()
	sim.wall = time.Since(start)
	return sim, nil
}

// plan draws each person's behaviour and joins them.
func (s *turnsSim) plan(t0 int64) {
	for i := range s.cfg.people {
		p := &turnsPerson{id: s.user(i), shopFor: s.between(time.Minute, 4*time.Minute), arriveAfter: s.between(2*time.Second, 10*time.Second)}
		joinAt := t0 + s.between(0, turnsJoinSpread)
		switch r := s.rng.IntN(100); {
		case r < s.cfg.awayPct:
			p.awayFrom = joinAt + s.between(10*time.Second, 30*time.Minute)
			p.awayTo = p.awayFrom + s.between(time.Minute, 15*time.Minute)
		case r < s.cfg.awayPct+s.cfg.gonePct:
			p.goneAt = joinAt + s.between(10*time.Second, 30*time.Minute)
		}
		p.noShow = s.rng.IntN(100) < s.cfg.nsPct
		s.people = append(s.people, p)
		s.byID[p.id] = p
		p.toldAt = -joinAt // joined at -toldAt until told
	}
}

// between draws a duration from lo to hi, in ms.
func (s *turnsSim) between(lo, hi time.Duration) int64 {
	return lo.Milliseconds() + s.rng.Int64N(max(1, (hi-lo).Milliseconds()))
}

// left describes the people not done yet, by what they are doing ("":
// everyone is done: admitted and gone from the shop, lapsed, or swept).
func (s *turnsSim) left() string {
	n := map[string]int{}
	for _, p := range s.people {
		switch {
		case p.done:
		case p.admittedAt > 0:
			n["admitted"]++
		case p.toldAt <= 0:
			n["not yet told a place"]++
		default:
			n["waiting or called"]++
		}
	}
	if len(n) == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
)

// RunStatuses measures what a status round costs the Redis given: -waiting
// users loaded, a connect round, then -rounds rounds as one gateway holding
// every socket reads them, on -path's status path. It prints one line
// (statusesResult); docs/performance.md tells what it does and means.
func RunStatuses(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg statusesConfig
	if ok, err := parseFlags("statuses", &cfg, args, stderr); !ok {
		return err
	}
	return simulate(cfg.conn(), "statuses", cfg.keep, stdout, stderr, func(s *simEvent) (fmt.Stringer, error) {
		return measureStatuses(ctx, s, cfg)
	})
}

// measureStatuses is RunStatuses once the flags are read and the event
// named: the event made and loaded, the rounds run and measured.
func measureStatuses(ctx context.Context, s *simEvent, cfg statusesConfig) (res statusesResult, err error) {
	res.waiting, res.rounds = cfg.waiting, cfg.rounds
	node, err := eventNode(ctx, s.store.Client(), s.id)
	if err != nil {
		return res, err
	}
	s.logf("redis-server %s at %s, event %s, %s", redisVersion(ctx, node), node.Options().Addr, s.id, cfg.line())
	var use [4]redisUse // before the event is made, after the load, after the connect round, after the rounds
	if use[0], err = redisUsage(ctx, node); err != nil {
		return res, err
	}
	if _, err := s.store.PutEvent(ctx, queue.Event{ID: s.id, Capacity: 100, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}); err != nil {
		return res, err
	}
	base := time.Now().UnixMilli() - int64(cfg.waiting) // one a millisecond up to now
	if err := s.load(ctx, cfg.waiting, cfg.batch, cfg.timeout, func(i int, _ int64) int64 { return base + int64(i) }, nil); err != nil {
		return res, err
	}
	if n, err := s.store.Client().ZCard(ctx, redisstore.WaitingKey(s.id)).Result(); err != nil || n != int64(cfg.waiting) {
		return res, fmt.Errorf("load: %d in line (%v), want %d", n, err, cfg.waiting)
	}
	g := s.gateway(cfg.path == "journal", cfg.timeout)
	for i := range cfg.waiting {
		g.follow(uint32(i))
	}
	if use[1], err = redisUsage(ctx, node); err != nil {
		return res, err
	}
	if err := readAll(ctx, g, statusesGreeting); err != nil {
		return res, fmt.Errorf("connect round: %w", err)
	}
	if use[2], err = redisUsage(ctx, node); err != nil {
		return res, err
	}
	res.connectCPU = use[2].cpu - use[1].cpu
	s.logf("connect round done: %.3f µs of Redis CPU per user", res.connectCPU.Seconds()*1e6/float64(cfg.waiting))
	start := time.Now()
	for r := range cfg.rounds {
		if err := readAll(ctx, g, cfg.waiting); err != nil {
			return res, fmt.Errorf("round %d: %w", r+1, err)
		}
		s.logf("round %d/%d done after %.1fs", r+1, cfg.rounds, time.Since(start).Seconds())
	}
	res.wall = time.Since(start)
	if use[3], err = redisUsage(ctx, node); err != nil {
		return res, err
	}
	res.cpu, res.loadBytes, res.presenceBytes = use[3].cpu-use[2].cpu, use[1].mem-use[0].mem, use[3].mem-use[0].mem
	return res, nil
}

// readAll reads every user once, slice after slice at once as a round
// with no spread does, at most per users a read, and checks each was in
// line. The connect round reads statusesGreeting a time, as a gateway
// greets sockets that opened together.
func readAll(ctx context.Context, g *simGateway, per int) error {
	var err error
	if !g.round(ctx, 0, func(j int, nums []uint32) {
		for from := 0; err == nil && from < len(nums); from += per {
			part := nums[from:min(from+per, len(nums))]
			places, rerr := g.read(ctx, part)
			if k := slices.IndexFunc(places, func(p queue.Place) bool { return p.Rank < 0 }); rerr == nil && k >= 0 {
				rerr = fmt.Errorf("user %s read out of line (rank %d)", g.user(int(part[k])), places[k].Rank)
			}
			if rerr != nil {
				err = fmt.Errorf("slice %d (%d users), from %d: %w", j, len(nums), from, rerr)
			}
		}
	}) {
		err = errors.Join(err, ctx.Err())
	}
	return err
}

// Bounds and fixed settings of "loadgen statuses".
const (
	maxStatusesWaiting = 20_000_000
	maxStatusesRounds  = 1000
	maxStatusesTimeout = 10 * time.Minute
	// statusesGreeting is how many users one read of the connect round
	// reads: sockets that open together, greeted together.
	statusesGreeting = 10_000
)

// statusesConfig are the settings of "loadgen statuses".
type statusesConfig struct {
	shown
	redisURL string
	seeds    string // a Redis Cluster's seed nodes, comma-separated ("": one server)
	waiting  int
	rounds   int
	batch    int
	timeout  time.Duration
	keep     bool
	path     string // "journal" (a gateway's, through its tracker) or "store" (Store.Status for every user)
}

// bind declares the statuses flags.
func (c *statusesConfig) bind(s *settings) {
	s.redis(&c.redisURL, "to measure", "the Redis to measure, redis://HOST:PORT/0 (required); with -redis-cluster only its scheme, user, password and options", c.conn)
	s.fs.StringVar(&c.seeds, "redis-cluster", "", "seed nodes (host:port, comma-separated) of a Redis Cluster, as the services' WAITQ_REDIS_CLUSTER; the CPU and memory are then the event's master's")
	s.intVar(&c.waiting, "waiting", 100_000, 1, maxStatusesWaiting, fmt.Sprintf("users put in line for the event (1 to %d)", maxStatusesWaiting))
	s.intVar(&c.rounds, "rounds", 1, 1, maxStatusesRounds, fmt.Sprintf("status rounds over every user (1 to %d)", maxStatusesRounds))
	s.intVar(&c.batch, "batch", 500, 1, maxIngestBatch, "joins per Store.Ingest call while loading (the ingest consumer's default MaxBatch)")
	s.durMax(&c.timeout, "timeout", gateway.DefaultConfig().StatusInterval, maxStatusesTimeout,
		"bound of each Redis call: an ingest batch, a slice's status read (a gateway bounds that by its status interval)")
	s.boolVar(&c.keep, "keep", false, "leave the event and its line in Redis (default: its keys are deleted at the end)")
	s.oneOf(&c.path, "path", "the status path: journal (a gateway's: each user read once at connect, then kept from the line's journal) or store (every user read from Redis every round: the way before)", "journal", "store")
}

// conn returns where the Redis is, as the services take it: the seeds
// split at commas, spaces dropped.
func (c *statusesConfig) conn() redisstore.Conn {
	seeds := strings.FieldsFunc(c.seeds, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	return redisstore.Conn{URL: c.redisURL, Cluster: seeds}
}

// statusesResult is what one run measured.
type statusesResult struct {
	waiting, rounds int
	cpu             time.Duration // the server's CPU time over the rounds
	wall            time.Duration // the rounds' wall time
	connectCPU      time.Duration // the server's CPU time of the connect round (every user's first read)
	loadBytes       int64         // used_memory after the load less before it
	presenceBytes   int64         // used_memory after the rounds less before the load
}

// String is the command's one line of output: the fields issue 30 names,
// then the memory per waiting user after the load and after the rounds
// (their presence marks included), then the CPU per user of the connect
// round that came before the rounds.
func (r statusesResult) String() string {
	userRounds := float64(r.waiting) * float64(r.rounds)
	return fmt.Sprintf("statuses: waiting=%d rounds=%d redis_cpu_us_per_user_round=%.3f wall_ms_per_round=%.1f redis_bytes_per_user=%.1f redis_bytes_per_user_with_presence=%.1f redis_cpu_us_per_user_connect=%.3f",
		r.waiting, r.rounds, r.cpu.Seconds()*1e6/userRounds,
		float64(r.wall.Microseconds())/1000/float64(r.rounds),
		float64(r.loadBytes)/float64(r.waiting), float64(r.presenceBytes)/float64(r.waiting),
		r.connectCPU.Seconds()*1e6/float64(r.waiting))
}

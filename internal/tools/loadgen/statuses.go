package loadgen

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
)

// RunStatuses measures what a status round costs the Redis given: it puts
// -waiting users in line for a fresh event through the ingest path
// (Store.Ingest, -batch joins a call, a few calls under way), runs a
// connect round (every user's first read, as when their sockets open),
// then -rounds status rounds over all of them as a gateway holding every
// one of their sockets would (the gateway's own slicing, slice pacing and
// reads, through gateway.Rounds: with -path journal its tracker, with -path store Store.Status for every user; presence
// included), and prints one line: the server's CPU (INFO cpu) per user and
// round, the wall time per round, the server's memory (INFO memory) per
// waiting user and the CPU per user of the connect round. The event's keys
// are deleted at the end unless -keep. Progress goes to stderr.
func RunStatuses(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg statusesConfig
	if ok, err := parseFlags("statuses", &cfg, args, stderr); !ok {
		return err
	}
	store, closeStore, err := openStore(cfg.conn())
	if err != nil {
		return err
	}
	defer closeStore()
	res, err := measureStatuses(ctx, store, cfg, stderr)
	if res.wall > 0 {
		fmt.Fprintln(stdout, res) // measured, whatever the clean-up did
	}
	return err
}

// measureStatuses is RunStatuses once the flags are read: the event made
// and loaded, the rounds run and measured, the event deleted (unless
// cfg.keep) whatever happened.
func measureStatuses(ctx context.Context, store *redisstore.Store, cfg statusesConfig, stderr io.Writer) (res statusesResult, err error) {
	ev, run := newRun("statuses")
	res.waiting, res.rounds = cfg.waiting, cfg.rounds
	node, err := eventNode(ctx, store.Client(), ev)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(stderr, "statuses: redis-server %s at %s, event %s, %s\n", redisVersion(ctx, node), node.Options().Addr, ev, cfg.line())

	mem0, err := usedMemory(ctx, node)
	if err != nil {
		return res, err
	}
	e := queue.Event{ID: ev, Capacity: 100, StaySeconds: 60, State: queue.StateOpen, Partitions: 1}
	switch created, err := store.PutEvent(ctx, e); {
	case err != nil:
		return res, err
	case !created:
		return res, fmt.Errorf("event %s was there already: a measurement takes a fresh event", ev)
	}
	if !cfg.keep {
		defer func() {
			if derr := deleteStatusesEvent(store, ev); derr != nil {
				err = errors.Join(err, derr)
			} else {
				fmt.Fprintf(stderr, "statuses: event %s deleted\n", ev)
			}
		}()
	}
	if err := loadLine(ctx, store, cfg, ev, run, stderr); err != nil {
		return res, err
	}
	mem1, err := usedMemory(ctx, node)
	if err != nil {
		return res, err
	}
	res.loadBytes = mem1 - mem0

	rounds := gateway.NewRounds(store, cfg.path == statusesJournal)
	slices := sliceUsers(rounds, ev, run, cfg.waiting)
	cpuc, err := serverCPU(ctx, node)
	if err != nil {
		return res, err
	}
	if err := connectRound(ctx, rounds, cfg, run, ev, slices); err != nil {
		return res, fmt.Errorf("connect round: %w", err)
	}
	cpu0, err := serverCPU(ctx, node)
	if err != nil {
		return res, err
	}
	res.connectCPU = cpu0 - cpuc
	fmt.Fprintf(stderr, "statuses: connect round done: %.3f µs of Redis CPU per user\n", res.connectCPU.Seconds()*1e6/float64(cfg.waiting))
	start := time.Now()
	for r := range cfg.rounds {
		if err := statusRound(ctx, rounds, cfg, run, ev, slices); err != nil {
			return res, fmt.Errorf("round %d: %w", r+1, err)
		}
		fmt.Fprintf(stderr, "statuses: round %d/%d done after %.1fs\n", r+1, cfg.rounds, time.Since(start).Seconds())
	}
	res.wall = time.Since(start)
	cpu1, err := serverCPU(ctx, node)
	if err != nil {
		return res, err
	}
	res.cpu = cpu1 - cpu0
	mem2, err := usedMemory(ctx, node)
	if err != nil {
		return res, err
	}
	res.presenceBytes = mem2 - mem0
	return res, nil
}

// loadLine puts cfg.waiting users in line for ev (ingestJoins), stamped
// one a millisecond up to now, and checks the line holds them all.
func loadLine(ctx context.Context, store *redisstore.Store, cfg statusesConfig, ev string, run uint64, stderr io.Writer) error {
	base := time.Now().UnixMilli() - int64(cfg.waiting)
	start := time.Now()
	var done atomic.Int64
	err := ingestJoins(ctx, store, cfg.waiting, cfg.batch, cfg.timeout,
		func(i int, _ int64) queue.Message { return statusesJoin(ev, run, i, base) },
		func(_ int, msgs []queue.Message, _ int64) {
			if n := done.Add(int64(len(msgs))); n/1_000_000 != (n-int64(len(msgs)))/1_000_000 {
				fmt.Fprintf(stderr, "statuses: load %5.1fs  %d/%d in line\n", time.Since(start).Seconds(), n, cfg.waiting)
			}
		})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	n, err := store.Client().ZCard(ctx, redisstore.WaitingKey(ev)).Result()
	if err != nil || n != int64(cfg.waiting) {
		return fmt.Errorf("load: %d in line (%v), want %d", n, err, cfg.waiting)
	}
	fmt.Fprintf(stderr, "statuses: load %5.1fs  %d in line, %.0f joins/s\n", time.Since(start).Seconds(), n, float64(n)/time.Since(start).Seconds())
	return nil
}

// ingestJoins puts joins 0 to n-1 in line through the ingest path,
// Store.Ingest, batch joins a call bounded by timeout, statusesLoaders
// calls under way, each batch made as it is sent (nothing of all the joins
// is held): join(i, the batch's making in unix ms). queued (unless nil)
// gets each batch once in line, with its first join and its making. It
// returns the first failure, which stops the others.
func ingestJoins(ctx context.Context, store *redisstore.Store, n, batch int, timeout time.Duration,
	join func(i int, made int64) queue.Message, queued func(from int, msgs []queue.Message, made int64)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	errs := make(chan error, statusesLoaders)
	var wg sync.WaitGroup
	for range statusesLoaders {
		wg.Go(func() {
			msgs := make([]queue.Message, 0, batch)
			for ctx.Err() == nil {
				from := int(next.Add(int64(batch))) - batch
				if from >= n {
					return
				}
				msgs = msgs[:0]
				made := time.Now().UnixMilli()
				for i := from; i < min(from+batch, n); i++ {
					msgs = append(msgs, join(i, made))
				}
				bctx, bcancel := context.WithTimeout(ctx, timeout)
				r, err := store.Ingest(bctx, msgs, time.Now().UnixMilli())
				bcancel()
				if err == nil && r.Joined != len(msgs) {
					err = fmt.Errorf("%d of %d joins queued (%+v)", r.Joined, len(msgs), r)
				}
				if err != nil {
					errs <- fmt.Errorf("joins %d-%d: %w", from, from+len(msgs)-1, err)
					cancel()
					return
				}
				if queued != nil {
					queued(from, msgs, made)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return errors.Join(<-errs)
}

// sliceUsers returns the users of each slice of r's rounds, by their
// number: the hub's slicing.
func sliceUsers(r *gateway.Rounds, ev string, run uint64, n int) [][]uint32 {
	out := make([][]uint32, r.Slices())
	for i := range n {
		j := r.Slice(ev, statusesUser(run, i))
		out[j] = append(out[j], uint32(i))
	}
	return out
}

// statusRound runs one status round over every user of ev as a gateway's
// does (Rounds.Run, its slices one after another at once, one read of the
// event's users of each slice), and checks every user was read in line.
func statusRound(ctx context.Context, r *gateway.Rounds, cfg statusesConfig, run uint64, ev string, slices [][]uint32) error {
	var errs []error
	ok := r.Run(ctx, 0, func(j int) {
		if len(errs) == 0 {
			if err := readStatuses(ctx, r, cfg, ev, run, slices[j]); err != nil {
				errs = append(errs, fmt.Errorf("slice %d (%d users): %w", j, len(slices[j]), err))
			}
		}
	})
	if !ok {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// connectRound reads every user once, statusesGreeting at a time, as a
// gateway greets sockets as they open (its greeting reads those that
// opened together): the first read of each, where the journal's path
// learns their place.
func connectRound(ctx context.Context, r *gateway.Rounds, cfg statusesConfig, run uint64, ev string, slices [][]uint32) error {
	for j := range slices {
		for from := 0; from < len(slices[j]); from += statusesGreeting {
			part := slices[j][from:min(from+statusesGreeting, len(slices[j]))]
			if err := readStatuses(ctx, r, cfg, ev, run, part); err != nil {
				return fmt.Errorf("slice %d, users %d-%d: %w", j, from, from+len(part)-1, err)
			}
		}
	}
	return nil
}

// readStatuses reads the users numbered nums of ev as a gateway does
// (Rounds.Read) and checks each was read in line.
func readStatuses(ctx context.Context, r *gateway.Rounds, cfg statusesConfig, ev string, run uint64, nums []uint32) error {
	users := make([]string, len(nums))
	for k, i := range nums {
		users[k] = statusesUser(run, int(i))
	}
	b, _, err := r.Read(ctx, ev, users, cfg.timeout)
	if err == nil && len(b.Places) != len(users) {
		err = fmt.Errorf("%d places for %d users", len(b.Places), len(users))
	}
	for k := 0; err == nil && k < len(b.Places); k++ {
		if b.Places[k].Rank < 0 {
			err = fmt.Errorf("user %s read out of line (rank %d)", users[k], b.Places[k].Rank)
		}
	}
	return err
}

// Bounds and fixed settings of "loadgen statuses".
const (
	maxStatusesWaiting = 20_000_000
	maxStatusesRounds  = 1000
	maxStatusesTimeout = 10 * time.Minute
	// statusesLoaders is how many ingest batches are under way at once.
	statusesLoaders = 4
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
	path     string // statusesJournal or statusesStore
}

// The status paths "loadgen statuses" measures.
const (
	// statusesJournal reads as a gateway does: gateway.Rounds over its
	// tracker, each user read once at connect, then kept from the line's
	// journal.
	statusesJournal = "journal"
	// statusesStore reads every user from Redis every round
	// (Store.Status): the path before the journal, kept for polls.
	statusesStore = "store"
)

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
	s.oneOf(&c.path, "path", "the status path: journal (a gateway's: each user read once at connect, then kept from the line's journal) or store (every user read from Redis every round: the way before)", statusesJournal, statusesStore)
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

// statusesUser returns the id of user i of run: shaped as an issued
// visitor id (queue.VisitorPrefix and 22 characters of base64url), so the
// members weigh what real ones do.
func statusesUser(run uint64, i int) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], run)
	binary.BigEndian.PutUint64(b[8:], uint64(i))
	return queue.VisitorPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// statusesJoin returns the join of user i of run into event, stamped base+i
// (one a millisecond) with a join key of 32 hex digits, as the waiting
// room page sends.
func statusesJoin(event string, run uint64, i int, base int64) queue.Message {
	return queue.Message{
		V: queue.MessageVersion, Op: queue.OpJoin, EventID: event, UserID: statusesUser(run, i),
		TS: base + int64(i), JoinKey: fmt.Sprintf("%016x%016x", run, i),
	}
}

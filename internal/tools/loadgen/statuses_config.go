package loadgen

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
)

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
	// statusesJournal reads as a gateway does: gateway.Tracker, each user
	// read once at connect, then kept from the line's journal.
	statusesJournal = "journal"
	// statusesStore reads every user from Redis every round
	// (Store.Status): the path before the journal, kept for polls.
	statusesStore = "store"
)

// bind declares the statuses flags.
func (c *statusesConfig) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.redisURL, "redis", "", "the Redis to measure, redis://HOST:PORT/0 (required); with -redis-cluster only its scheme, user, password and options")
	fs.StringVar(&c.seeds, "redis-cluster", "", "seed nodes (host:port, comma-separated) of a Redis Cluster, as the services' WAITQ_REDIS_CLUSTER; the CPU and memory are then the event's master's")
	fs.IntVar(&c.waiting, "waiting", 100_000, fmt.Sprintf("users put in line for the event (1 to %d)", maxStatusesWaiting))
	fs.IntVar(&c.rounds, "rounds", 1, fmt.Sprintf("status rounds over every user (1 to %d)", maxStatusesRounds))
	fs.IntVar(&c.batch, "batch", 500, "joins per Store.Ingest call while loading (the ingest consumer's default MaxBatch)")
	fs.DurationVar(&c.timeout, "timeout", gateway.DefaultConfig().StatusInterval,
		"bound of each Redis call: an ingest batch, a slice's status read (a gateway bounds that by its status interval)")
	fs.BoolVar(&c.keep, "keep", false, "leave the event and its line in Redis (default: its keys are deleted at the end)")
	fs.StringVar(&c.path, "path", statusesJournal, "the status path: journal (a gateway's: each user read once at connect, then kept from the line's journal) or store (every user read from Redis every round: the way before)")
}

// line returns the settings, for the progress lines.
func (c *statusesConfig) line() string {
	return fmt.Sprintf("-waiting %d -rounds %d -batch %d -timeout %s -keep=%t -path %s", c.waiting, c.rounds, c.batch, c.timeout, c.keep, c.path)
}

// conn returns where the Redis is, as the services take it.
func (c *statusesConfig) conn() redisstore.Conn {
	var seeds []string
	for s := range strings.SplitSeq(c.seeds, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	return redisstore.Conn{URL: c.redisURL, Cluster: seeds}
}

// validate checks the statuses flags.
func (c *statusesConfig) validate() error {
	var errs []error
	switch {
	case c.redisURL == "":
		errs = append(errs, errors.New("-redis: required, the Redis to measure (redis://HOST:PORT/0)"))
	default:
		if err := c.conn().Validate(); err != nil {
			errs = append(errs, fmt.Errorf("-redis %q: %w", c.redisURL, err))
		}
	}
	if c.waiting < 1 || c.waiting > maxStatusesWaiting {
		errs = append(errs, fmt.Errorf("-waiting %d: must be between 1 and %d", c.waiting, maxStatusesWaiting))
	}
	if c.rounds < 1 || c.rounds > maxStatusesRounds {
		errs = append(errs, fmt.Errorf("-rounds %d: must be between 1 and %d", c.rounds, maxStatusesRounds))
	}
	if c.batch < 1 || c.batch > maxIngestBatch {
		errs = append(errs, fmt.Errorf("-batch %d: must be between 1 and %d", c.batch, maxIngestBatch))
	}
	if c.path != statusesJournal && c.path != statusesStore {
		errs = append(errs, fmt.Errorf("-path %q: must be %s or %s", c.path, statusesJournal, statusesStore))
	}
	if c.timeout <= 0 || c.timeout > maxStatusesTimeout {
		errs = append(errs, fmt.Errorf("-timeout %s: must be positive and at most %s", c.timeout, maxStatusesTimeout))
	}
	return errors.Join(errs...)
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
// (one a millisecond) with a visit key of 32 hex digits, as the waiting
// room page sends.
func statusesJoin(event string, run uint64, i int, base int64) queue.Message {
	return queue.Message{
		V: queue.MessageVersion, Op: queue.OpJoin, EventID: event, UserID: statusesUser(run, i),
		TS: base + int64(i), JoinKey: fmt.Sprintf("%016x%016x", run, i),
	}
}

package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

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
// reads: gateway.Slicer, RunRound, ReadEvents, and with -path journal its
// Tracker, with -path store Store.Status for every user; presence
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

// newRun returns a run's random number and the event it measures with,
// loadgen-<kind>-<the number in 16 hex digits>.
func newRun(kind string) (ev string, run uint64) {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	run = binary.BigEndian.Uint64(b[:])
	return fmt.Sprintf("loadgen-%s-%016x", kind, run), run
}

// openStore returns a Store on the Redis conn names, the fast track off,
// and the function that closes its client.
func openStore(conn redisstore.Conn) (*redisstore.Store, func(), error) {
	rc, err := conn.Client()
	if err != nil {
		return nil, nil, err
	}
	store, err := redisstore.New(rc, redisstore.Options{})
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return store, func() { _ = rc.Close() }, nil
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
	info, err := redisInfo(ctx, node, "server")
	if err != nil {
		return res, err
	}
	fmt.Fprintf(stderr, "statuses: redis-server %s at %s, event %s, %s\n", info["redis_version"], node.Options().Addr, ev, cfg.line())

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

	slices := sliceUsers(ev, run, cfg.waiting)
	var reader gateway.StatusReader = store
	if cfg.path == statusesJournal {
		reader = gateway.NewTracker(store)
	}
	cpuc, err := serverCPU(ctx, node)
	if err != nil {
		return res, err
	}
	if err := connectRound(ctx, reader, cfg, ev, run, slices); err != nil {
		return res, fmt.Errorf("connect round: %w", err)
	}
	script0, scriptErr := scriptTime(ctx, node) // for a progress line only
	cpu0, err := serverCPU(ctx, node)
	if err != nil {
		return res, err
	}
	res.connectCPU = cpu0 - cpuc
	fmt.Fprintf(stderr, "statuses: connect round done: %.3f µs of Redis CPU per user\n", res.connectCPU.Seconds()*1e6/float64(cfg.waiting))
	start := time.Now()
	for r := range cfg.rounds {
		if err := statusRound(ctx, reader, cfg, ev, run, slices); err != nil {
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
	if script1, err := scriptTime(ctx, node); err == nil && scriptErr == nil {
		// Where the CPU went: inside the scripts, or around them (the
		// protocol, the sockets).
		fmt.Fprintf(stderr, "statuses: %.3f µs per user and round inside the scripts (INFO commandstats), of %.3f in all\n",
			float64((script1-script0).Microseconds())/float64(cfg.waiting)/float64(cfg.rounds),
			res.cpu.Seconds()*1e6/float64(cfg.waiting)/float64(cfg.rounds))
	}
	mem2, err := usedMemory(ctx, node)
	if err != nil {
		return res, err
	}
	res.presenceBytes = mem2 - mem0
	return res, nil
}

// loadLine puts cfg.waiting users in line for ev through Store.Ingest,
// cfg.batch joins a call, statusesLoaders calls under way, each batch made
// as it is sent (nothing of all the users is held), and checks the line
// holds them all.
func loadLine(ctx context.Context, store *redisstore.Store, cfg statusesConfig, ev string, run uint64, stderr io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	base := time.Now().UnixMilli() - int64(cfg.waiting)
	start := time.Now()
	var next, done atomic.Int64
	errs := make(chan error, statusesLoaders)
	var wg sync.WaitGroup
	for range statusesLoaders {
		wg.Go(func() {
			msgs := make([]queue.Message, 0, cfg.batch)
			for {
				from := int(next.Add(int64(cfg.batch))) - cfg.batch
				if from >= cfg.waiting || ctx.Err() != nil {
					return
				}
				msgs = msgs[:0]
				for i := from; i < min(from+cfg.batch, cfg.waiting); i++ {
					msgs = append(msgs, statusesJoin(ev, run, i, base))
				}
				bctx, bcancel := context.WithTimeout(ctx, cfg.timeout)
				r, err := store.Ingest(bctx, msgs, time.Now().UnixMilli())
				bcancel()
				if err == nil && r.Joined != len(msgs) {
					err = fmt.Errorf("%d of %d joins queued (%+v)", r.Joined, len(msgs), r)
				}
				if err != nil {
					errs <- fmt.Errorf("load: joins %d-%d: %w", from, from+len(msgs)-1, err)
					cancel()
					return
				}
				if n := done.Add(int64(len(msgs))); n/1_000_000 != (n-int64(len(msgs)))/1_000_000 {
					fmt.Fprintf(stderr, "statuses: load %5.1fs  %d/%d in line\n", time.Since(start).Seconds(), n, cfg.waiting)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(<-errs); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	n, err := store.Client().ZCard(ctx, redisstore.WaitingKey(ev)).Result()
	if err != nil || n != int64(cfg.waiting) {
		return fmt.Errorf("load: %d in line (%v), want %d", n, err, cfg.waiting)
	}
	fmt.Fprintf(stderr, "statuses: load %5.1fs  %d in line, %.0f joins/s\n", time.Since(start).Seconds(), n, float64(n)/time.Since(start).Seconds())
	return nil
}

// sliceUsers returns the users of each slice of a status round, by their
// number: a gateway.Slicer's slicing, the hub's.
func sliceUsers(ev string, run uint64, n int) [gateway.StatusSlices][]uint32 {
	var out [gateway.StatusSlices][]uint32
	slicer := gateway.NewSlicer()
	for j := range out {
		out[j] = make([]uint32, 0, n/gateway.StatusSlices+n/100+1)
	}
	for i := range n {
		j := slicer.Slice(ev, statusesUser(run, i))
		out[j] = append(out[j], uint32(i))
	}
	return out
}

// statusRound runs one status round over every user of ev as a gateway's
// does (gateway.RunRound, its slices one after another at once;
// gateway.ReadEvents, one read of store for the event's users of the
// slice), and checks every user was read in line.
func statusRound(ctx context.Context, store gateway.StatusReader, cfg statusesConfig, ev string, run uint64, slices [gateway.StatusSlices][]uint32) error {
	var errs []error
	ok := gateway.RunRound(ctx, 0, func(j int) {
		if len(errs) > 0 {
			return
		}
		users := make([]string, len(slices[j]))
		for k, i := range slices[j] {
			users[k] = statusesUser(run, int(i))
		}
		if err := readStatuses(ctx, store, cfg, ev, users); err != nil {
			errs = append(errs, fmt.Errorf("slice %d (%d users): %w", j, len(users), err))
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
func connectRound(ctx context.Context, store gateway.StatusReader, cfg statusesConfig, ev string, run uint64, slices [gateway.StatusSlices][]uint32) error {
	for j := range slices {
		for from := 0; from < len(slices[j]); from += statusesGreeting {
			part := slices[j][from:min(from+statusesGreeting, len(slices[j]))]
			users := make([]string, len(part))
			for k, i := range part {
				users[k] = statusesUser(run, int(i))
			}
			if err := readStatuses(ctx, store, cfg, ev, users); err != nil {
				return fmt.Errorf("slice %d, users %d-%d: %w", j, from, from+len(part)-1, err)
			}
		}
	}
	return nil
}

// readStatuses reads users of ev as a gateway does (gateway.ReadEvents)
// and checks each was read in line.
func readStatuses(ctx context.Context, store gateway.StatusReader, cfg statusesConfig, ev string, users []string) error {
	var rerr error
	gateway.ReadEvents(ctx, store, map[string][]string{ev: users}, cfg.timeout, time.Now,
		func(_ string, b queue.StatusBatch, _ int64, err error) {
			if err == nil && len(b.Places) != len(users) {
				err = fmt.Errorf("%d places for %d users", len(b.Places), len(users))
			}
			for k := 0; err == nil && k < len(b.Places); k++ {
				if b.Places[k].Rank < 0 {
					err = fmt.Errorf("user %s read out of line (rank %d)", users[k], b.Places[k].Rank)
				}
			}
			rerr = err
		})
	return rerr
}

// deleteStatusesEvent deletes ev's keys and registration the way the admin
// DELETE does (Store.DeleteEvent), then its tombstone: it has no log.
func deleteStatusesEvent(store *redisstore.Store, ev string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := store.DeleteEvent(ctx, ev, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("delete the event %s: %w", ev, err)
	}
	return store.ClearTombstone(ctx, ev)
}

// eventNode returns a client of the server that holds ev's keys: the one
// server, or a cluster's master of ev's hash slot.
func eventNode(ctx context.Context, rc redis.UniversalClient, ev string) (*redis.Client, error) {
	switch c := rc.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
		defer cancel()
		node, err := c.MasterForKey(ctx, redisstore.WaitingKey(ev))
		if err != nil {
			return nil, fmt.Errorf("the cluster's master of %s: %w", ev, err)
		}
		return node, nil
	}
	return nil, fmt.Errorf("a Redis client of type %T", rc)
}

// serverCPU returns the server's CPU time (redisstore.ServerCPU), within
// metricsTimeout.
func serverCPU(ctx context.Context, node *redis.Client) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	return redisstore.ServerCPU(ctx, node)
}

// usedMemory returns the server's INFO memory used_memory, in bytes.
func usedMemory(ctx context.Context, node *redis.Client) (int64, error) {
	info, err := redisInfo(ctx, node, "memory")
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(info["used_memory"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO memory used_memory %q: %w", info["used_memory"], err)
	}
	return n, nil
}

// scriptTime returns the time the server spent running scripts (EVALSHA
// and EVAL) since its statistics were last reset: INFO commandstats.
func scriptTime(ctx context.Context, node *redis.Client) (time.Duration, error) {
	info, err := redisInfo(ctx, node, "commandstats")
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, cmd := range []string{"cmdstat_evalsha", "cmdstat_eval"} {
		for field := range strings.SplitSeq(info[cmd], ",") {
			if v, ok := strings.CutPrefix(field, "usec="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("INFO commandstats %s %q: %w", cmd, info[cmd], err)
				}
				total += time.Duration(us) * time.Microsecond
			}
		}
	}
	return total, nil
}

package loadgen

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
)

// The pieces the simulations of a sale (statuses, sale, turns) share: the
// one event each runs in, the line loaded through the ingest path, and a
// gateway without sockets that reads statuses as ws-gateway's rounds do.

// simulate runs measure in a new event of command's on the Redis conn
// names and prints the report it returns unless measure failed. The event
// is deleted afterwards (unless keep), also after a failure.
func simulate(conn redisstore.Conn, command string, keep bool, stdout, stderr io.Writer, measure func(*simEvent) (fmt.Stringer, error)) (err error) {
	store, err := redisstore.DialConn(context.Background(), conn) // the fast track off
	if err != nil {
		return err
	}
	defer store.Close()
	s := &simEvent{store: store, run: rand.Uint64(), command: command, stderr: stderr}
	s.id = fmt.Sprintf("loadgen-%s-%016x", command, s.run)
	if !keep {
		defer s.deleteAfter(&err)
	}
	res, err := measure(s)
	if err == nil {
		fmt.Fprintln(stdout, res)
	}
	return err
}

// simEvent is the one event a simulation runs in, loadgen-<command>-<run
// in 16 hex digits>, its users numbered (user); progress goes to stderr.
type simEvent struct {
	store   *redisstore.Store
	id      string
	run     uint64
	command string
	stderr  io.Writer
}

// deleteAfter deletes the event's keys (deleteBenchEvent) unless it was
// never made, its failure joined to *err.
func (s *simEvent) deleteAfter(err *error) {
	switch derr := deleteBenchEvent(s.store, s.id); {
	case errors.Is(derr, queue.ErrEventNotFound): // measure failed before making it
	case derr != nil:
		*err = errors.Join(*err, derr)
	default:
		s.logf("event %s deleted", s.id)
	}
}

// logf prints a line of progress, headed by the command.
func (s *simEvent) logf(format string, args ...any) {
	fmt.Fprintf(s.stderr, s.command+": "+format+"\n", args...)
}

// user returns the id of user i: shaped as an issued visitor id
// (queue.VisitorPrefix and 22 characters of base64url), so the members
// weigh what real ones do.
func (s *simEvent) user(i int) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], s.run)
	binary.BigEndian.PutUint64(b[8:], uint64(i))
	return queue.VisitorPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// join returns the join of user i stamped ts, with a join key of 32 hex
// digits, as the waiting room page sends.
func (s *simEvent) join(i int, ts int64) queue.Message {
	return queue.Message{V: queue.MessageVersion, Op: queue.OpJoin, EventID: s.id, UserID: s.user(i), TS: ts,
		JoinKey: fmt.Sprintf("%016x%016x", s.run, i)}
}

// load puts users 0 to n-1 in line (ingestJoins), join i stamped
// stamp(i, its batch's making), and gives each batch once in line to
// queued (unless nil); it tells stderr how far it is every million.
func (s *simEvent) load(ctx context.Context, n, batch int, timeout time.Duration,
	stamp func(i int, made int64) int64, queued func(from, to int, made int64)) error {
	start := time.Now()
	var done atomic.Int64
	err := ingestJoins(ctx, s.store, n, batch, timeout,
		func(i int, made int64) queue.Message { return s.join(i, stamp(i, made)) },
		func(from, to int, made int64) {
			if queued != nil {
				queued(from, to, made)
			}
			if d := done.Add(int64(to - from)); d/1_000_000 != (d-int64(to-from))/1_000_000 {
				s.logf("load %5.1fs  %d/%d in line", time.Since(start).Seconds(), d, n)
			}
		})
	if err = errors.Join(err, ctx.Err()); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	s.logf("load %5.1fs  %d joined, %.0f joins/s", time.Since(start).Seconds(), n, float64(n)/time.Since(start).Seconds())
	return nil
}

// simLoaders is how many ingest batches ingestJoins has under way at once.
const simLoaders = 4

// ingestJoins puts joins 0 to n-1 in line through the ingest path,
// Store.Ingest, batch joins a call bounded by timeout, simLoaders calls
// under way, each batch made as it is sent (nothing of all the joins is
// held): join(i, the batch's making in unix ms). queued (unless nil) gets
// each batch once in line: its joins from to to-1 and its making. It
// returns the first failure, which stops the others.
func ingestJoins(ctx context.Context, store *redisstore.Store, n, batch int, timeout time.Duration,
	join func(i int, made int64) queue.Message, queued func(from, to int, made int64)) error {
	loaders, ctx := errgroup.WithContext(ctx)
	loaders.SetLimit(simLoaders)
	for from := 0; from < n && ctx.Err() == nil; from += batch {
		loaders.Go(func() error {
			to, made := min(from+batch, n), time.Now().UnixMilli()
			msgs := make([]queue.Message, 0, to-from)
			for i := from; i < to; i++ {
				msgs = append(msgs, join(i, made))
			}
			bctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			r, err := store.Ingest(bctx, msgs, time.Now().UnixMilli())
			if err == nil && r.Joined != len(msgs) {
				err = fmt.Errorf("%d of %d joins queued (%+v)", r.Joined, len(msgs), r)
			}
			if err != nil {
				return fmt.Errorf("joins %d-%d: %w", from, to-1, err)
			}
			if queued != nil {
				queued(from, to, made)
			}
			return nil
		})
	}
	return loaders.Wait()
}

// simGateway is a gateway without sockets following users of a simEvent by
// number (4 bytes each): its own gateway.Rounds (the hub's slicing, a
// round's pacing and reads: ws-gateway's code) and its users by slice.
type simGateway struct {
	*simEvent
	rounds  *gateway.Rounds
	timeout time.Duration // bound of each read
	mu      sync.Mutex
	slices  [][]uint32
}

// gateway returns a gateway of s reading through the line's journal
// (journal, as ws-gateway does) or every user from the store.
func (s *simEvent) gateway(journal bool, timeout time.Duration) *simGateway {
	r := gateway.NewRounds(s.store, journal)
	return &simGateway{simEvent: s, rounds: r, timeout: timeout, slices: make([][]uint32, r.Slices())}
}

// follow puts the users numbered nums in their slices.
func (g *simGateway) follow(nums ...uint32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range nums {
		j := g.rounds.Slice(g.id, g.user(int(n)))
		g.slices[j] = append(g.slices[j], n)
	}
}

// read reads the places of the users numbered nums as a round's read does
// (Rounds.Read), one a user.
func (g *simGateway) read(ctx context.Context, nums []uint32) ([]queue.Place, error) {
	ids := make([]string, len(nums))
	for k, n := range nums {
		ids[k] = g.user(int(n))
	}
	b, _, err := g.rounds.Read(ctx, g.id, ids, g.timeout)
	if err == nil && len(b.Places) != len(ids) {
		err = fmt.Errorf("%d places for %d users", len(b.Places), len(ids))
	}
	return b.Places, err
}

// round runs one round spread over spread (Rounds.Run): f(j, the users
// of slice j as it starts). It returns false when ctx ended first.
func (g *simGateway) round(ctx context.Context, spread time.Duration, f func(j int, nums []uint32)) bool {
	return g.rounds.Run(ctx, spread, func(j int) {
		g.mu.Lock()
		nums := slices.Clone(g.slices[j])
		g.mu.Unlock()
		f(j, nums)
	})
}

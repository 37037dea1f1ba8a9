package gateway

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/queue"
)

// The pieces of a status round that touch Redis: which users go together
// (slicer, statusSlices), when each slice is read (runRound) and how
// (readEvents). A measurement reaches them through one door, Rounds.

// statusSlices is how many slices a status round has: each slice is
// hubShards/statusSlices shards of the hub, read from Redis and written on
// its own, at its own offset within the round's spread. Spreading keeps one
// instant from carrying every socket's frame (what made frames late), and
// each slice's read covers only its users, so a frame is as fresh as the
// slice's read.
const statusSlices = 16

// statusReader is what a status round reads with: a gateway's tracker
// (the store's Status reads every user from Redis: the way before it, kept
// for polls and for comparison).
type statusReader interface {
	// Status reads where users stand in eventID, in order, and marks the
	// waiting ones as present at nowMs.
	Status(ctx context.Context, eventID string, users []string, nowMs int64) (queue.StatusBatch, error)
}

// slicer places a user of an event in a shard of the hub, and so in a slice
// of the status round: a hash of both under a seed of its own (a hub's,
// made at start: every gateway slices its users evenly, each differently).
type slicer struct{ seed maphash.Seed }

// newSlicer returns a slicer with a fresh seed.
func newSlicer() slicer { return slicer{seed: maphash.MakeSeed()} }

// shard returns the hub shard of user of event.
func (s slicer) shard(event, user string) uint64 {
	return maphash.String(s.seed, event+"\x00"+user) % hubShards
}

// Slice returns the slice of a status round that reads user of event,
// from 0 to statusSlices-1.
func (s slicer) Slice(event, user string) int {
	return int(s.shard(event, user) / (hubShards / statusSlices))
}

// runRound runs the slices of one status round: f(j) for each slice j in
// turn, slice j at the round's start plus spread×j/statusSlices (spread under
// a millisecond a slice: one after another at once). It returns false when
// ctx ended before the last slice.
func runRound(ctx context.Context, spread time.Duration, f func(j int)) bool {
	if spread < statusSlices*time.Millisecond {
		spread = 0 // slices under a millisecond apart: timer wake-ups for nothing
	}
	begin := time.Now()
	for j := range statusSlices {
		if !clock.SleepUntil(ctx, begin.Add(spread*time.Duration(j)/statusSlices)) {
			return false
		}
		f(j)
	}
	return true
}

// readEvents reads where each event's users stand (users: event -> its
// users, each once) with one store.Status call per event, a few events at a
// time, each call stamped with now at its start and bounded by timeout, and
// calls got with each event's reply, in the goroutine that read it. It
// returns once every got returned.
func readEvents(ctx context.Context, store statusReader, users map[string][]string, timeout time.Duration, now func() time.Time,
	got func(event string, b queue.StatusBatch, nowMs int64, err error)) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for ev, us := range users {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			nowMs := now().UnixMilli()
			rctx, cancel := context.WithTimeout(ctx, timeout)
			b, err := store.Status(rctx, ev, us, nowMs)
			cancel()
			got(ev, b, nowMs, err)
		})
	}
	wg.Wait()
}

// Rounds is a gateway's status rounds without its sockets: the one door
// through which a measurement (loadgen statuses and sale) reads statuses
// exactly as ws-gateway's rounds do, with the hub's slicing, a round's
// pacing and its reads. A Rounds is safe for concurrent use.
type Rounds struct {
	slicer  slicer
	reader  statusReader
	tracker *tracker // nil when reading the store's way
}

// NewRounds returns the rounds of a gateway of its own over store: reading
// through a tracker from the line's journal (journal, what ws-gateway
// does), or with store.Status for every user (the way before the journal,
// as polls still read).
func NewRounds(store queue.GatewayStore, journal bool) *Rounds {
	r := &Rounds{slicer: newSlicer(), reader: store}
	if journal {
		r.tracker = newTracker(store)
		r.reader = r.tracker
	}
	return r
}

// Slices is how many slices a round has.
func (r *Rounds) Slices() int { return statusSlices }

// Slice returns the slice of a round that reads user of event.
func (r *Rounds) Slice(event, user string) int { return r.slicer.Slice(event, user) }

// Run runs one round: f(j) for each slice j in turn, spread over spread
// (runRound). It returns false when ctx ended before the last slice.
func (r *Rounds) Run(ctx context.Context, spread time.Duration, f func(j int)) bool {
	return runRound(ctx, spread, f)
}

// Read reads where users of event stand as a round's read does
// (readEvents), bounded by timeout; nowMs is the read's stamp.
func (r *Rounds) Read(ctx context.Context, event string, users []string, timeout time.Duration) (b queue.StatusBatch, nowMs int64, err error) {
	readEvents(ctx, r.reader, map[string][]string{event: users}, timeout, time.Now, func(_ string, rb queue.StatusBatch, at int64, rerr error) {
		b, nowMs, err = rb, at, rerr
	})
	return b, nowMs, err
}

// Status reads where users of event stand at nowMs as a round's read does,
// with no bound but ctx's.
func (r *Rounds) Status(ctx context.Context, event string, users []string, nowMs int64) (queue.StatusBatch, error) {
	return r.reader.Status(ctx, event, users, nowMs)
}

// Leave lets go of user's presence in event, as a socket closing does
// (tracker.Leave); nothing when reading the store's way.
func (r *Rounds) Leave(event, user string) {
	if r.tracker != nil {
		r.tracker.Leave(event, user)
	}
}

// Flush lets go of the presences left since the last Flush, as ws-gateway's
// letGo does once a second (tracker.Flush); nothing when reading the
// store's way.
func (r *Rounds) Flush(ctx context.Context, nowMs int64) error {
	if r.tracker == nil {
		return nil
	}
	return r.tracker.Flush(ctx, nowMs)
}

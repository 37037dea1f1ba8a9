package gateway

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/queue"
)

// The pieces of a status round that touch Redis, exported so that a
// measurement (loadgen statuses) reads statuses exactly as a gateway's
// round does: which users go together (Slicer, StatusSlices), when each
// slice is read (RunRound) and how (ReadEvents).

// StatusSlices is how many slices a status round has: each slice is
// hubShards/StatusSlices shards of the hub, read from Redis and written on
// its own, at its own offset within the round's spread. Spreading keeps one
// instant from carrying every socket's frame (what made frames late), and
// each slice's read covers only its users, so a frame is as fresh as the
// slice's read.
const StatusSlices = 16

// StatusReader is what a status round reads with: a gateway's Tracker
// (the store's Status reads every user from Redis: the way before it, kept
// for polls and for comparison).
type StatusReader interface {
	// Status reads where users stand in eventID, in order, and marks the
	// waiting ones as present at nowMs.
	Status(ctx context.Context, eventID string, users []string, nowMs int64) (queue.StatusBatch, error)
}

// Slicer places a user of an event in a shard of the hub, and so in a slice
// of the status round: a hash of both under a seed of its own (a hub's,
// made at start: every gateway slices its users evenly, each differently).
type Slicer struct{ seed maphash.Seed }

// NewSlicer returns a Slicer with a fresh seed.
func NewSlicer() Slicer { return Slicer{seed: maphash.MakeSeed()} }

// shard returns the hub shard of user of event.
func (s Slicer) shard(event, user string) uint64 {
	return maphash.String(s.seed, event+"\x00"+user) % hubShards
}

// Slice returns the slice of a status round that reads user of event,
// from 0 to StatusSlices-1.
func (s Slicer) Slice(event, user string) int {
	return int(s.shard(event, user) / (hubShards / StatusSlices))
}

// RunRound runs the slices of one status round: f(j) for each slice j in
// turn, slice j at the round's start plus spread×j/StatusSlices (spread under
// a millisecond a slice: one after another at once). It returns false when
// ctx ended before the last slice.
func RunRound(ctx context.Context, spread time.Duration, f func(j int)) bool {
	if spread < StatusSlices*time.Millisecond {
		spread = 0 // slices under a millisecond apart: timer wake-ups for nothing
	}
	begin := time.Now()
	for j := range StatusSlices {
		if !clock.SleepUntil(ctx, begin.Add(spread*time.Duration(j)/StatusSlices)) {
			return false
		}
		f(j)
	}
	return true
}

// ReadEvents reads where each event's users stand (users: event -> its
// users, each once) with one store.Status call per event, a few events at a
// time, each call stamped with now at its start and bounded by timeout, and
// calls got with each event's reply, in the goroutine that read it. It
// returns once every got returned.
func ReadEvents(ctx context.Context, store StatusReader, users map[string][]string, timeout time.Duration, now func() time.Time,
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

package rebuild

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/waitq/waitq/internal/queue"
)

// Result is what one rebuild did.
type Result struct {
	EventID string
	queue.LogStats
	// Unknown counts valid messages of an op the fold does not know.
	Unknown int64
	// The sizes of the state written.
	Waiting, Holders, Served, Prequeue int
	AdmittedTotal                      int64
	// Read is the time spent reading and folding the log, Paused the time
	// the event's admission was stopped (from the mark to its removal).
	Read, Paused time.Duration
}

// Rebuilder rebuilds events from their log into the store.
type Rebuilder struct {
	Log   queue.LogReader
	Store queue.RebuildStore
	// Now is the clock (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

func (r *Rebuilder) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// Rebuild rebuilds eventID: Begin, then Finish.
func (r *Rebuilder) Rebuild(ctx context.Context, eventID string) (Result, error) {
	began, err := r.Begin(ctx, eventID)
	if err != nil {
		return Result{EventID: eventID}, err
	}
	return r.Finish(ctx, eventID, began)
}

// Begin marks eventID as being rebuilt and returns when: its admission
// stops, the consumer holds its messages. The log's end is taken after it,
// so every message the consumer did not write is either read by Finish or
// held for after it.
func (r *Rebuilder) Begin(ctx context.Context, eventID string) (time.Time, error) {
	began := r.now()
	return began, r.Store.BeginRebuild(ctx, eventID, began.UnixMilli())
}

// Finish reads eventID's log, folds it, writes the state and removes the
// mark. On error the mark stays (statuses keep saying rebuilding, nothing
// is admitted): run the rebuild again.
func (r *Rebuilder) Finish(ctx context.Context, eventID string, began time.Time) (Result, error) {
	res := Result{EventID: eventID}
	var (
		mu    sync.Mutex
		parts = map[int]*queue.Replay{}
	)
	stats, err := r.Log.ReadLog(ctx, eventID, func(p int, offset int64, m queue.Message) {
		mu.Lock()
		rp := parts[p]
		if rp == nil {
			rp = queue.NewReplay()
			rp.Partition = p
			parts[p] = rp
		}
		mu.Unlock()
		rp.ApplyAt(offset, m) // one goroutine per partition
	})
	res.LogStats = stats
	if err != nil {
		return res, fmt.Errorf("rebuild %s: %w", eventID, err)
	}
	all := queue.NewReplay()
	for _, rp := range parts {
		all.Merge(rp)
	}
	res.Unknown = all.Unknown
	now := r.now()
	res.Read = now.Sub(began)
	st, ok := all.State(now.UnixMilli())
	if !ok {
		return res, fmt.Errorf("rebuild %s: the log holds no config record (%d messages): the line has no event; PUT the event's configuration, then rebuild", eventID, stats.Messages)
	}
	st.Ends = stats.Ends
	if err := st.CheckDraw(); err != nil {
		return res, fmt.Errorf("rebuild %s: %w", eventID, err)
	}
	res.Waiting, res.Holders, res.Served, res.Prequeue = len(st.Waiting), len(st.Holders), len(st.Served), len(st.Prequeue)
	res.AdmittedTotal = st.AdmittedTotal
	if err := r.Store.WriteRebuilt(ctx, st, now.UnixMilli()); err != nil {
		return res, fmt.Errorf("rebuild %s: %w", eventID, err)
	}
	if err := r.Store.EndRebuild(ctx, eventID); err != nil {
		return res, fmt.Errorf("rebuild %s: %w", eventID, err)
	}
	res.Paused = r.now().Sub(began)
	if r.Logger != nil {
		r.Logger.Info("event rebuilt from its log", "event", eventID, "messages", stats.Messages, "partitions", stats.Partitions,
			"invalid", stats.Invalid, "unknown", res.Unknown, "waiting", res.Waiting, "holders", res.Holders, "served", res.Served,
			"admittedTotal", res.AdmittedTotal, "read", res.Read.String(), "paused", res.Paused.String())
	}
	return res, nil
}

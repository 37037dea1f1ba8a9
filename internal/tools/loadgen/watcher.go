package loadgen

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/tools/loadgen/latency"
)

// lagSample is one followed join: its user, when its request started and
// when its 202 came back.
type lagSample struct {
	user         string
	start, acked time.Time
	polls        int // polls that asked for it
}

// watcher finds when followed users appear in the bench event's waiting
// line, or among its holders when the fast track admitted them as they were
// written. add and finish may be called from any goroutine; run polls from
// one goroutine, once.
type watcher struct {
	rc redis.UniversalClient

	mu     sync.Mutex
	fresh  []lagSample // added, not yet taken by run
	giveUp time.Time   // set by finish: no sample is added any more
}

// watchResult is what one run of a watcher found.
type watchResult struct {
	afterAck   latency.Sorted // 202 → seen of each sample seen, sorted
	afterStart latency.Sorted // request start → seen, sorted
	atFirst    int            // of those seen, those present at their first poll
	unseen     int            // still not seen when run gave up
	polls      int            // pipelines sent
	pollErrors int            // pipelines with an error other than "no such member"
	lastErr    error          // the last of those errors
}

// follow is the request of the probe and of the open-loop run: a join to
// url of a user named after prefix, the worker and n, every every-th one
// answered 202 handed to w with the times it started and was answered.
func (w *watcher) follow(c *http.Client, url, prefix string, every int64) request {
	var answered atomic.Int64
	return func(ctx context.Context, wk *worker, n int) (string, string) {
		user := userOf(prefix, wk, n)
		start := time.Now()
		class, sample := join(ctx, c, url, user)
		if class == "" && answered.Add(1)%every == 0 {
			w.mu.Lock()
			w.fresh = append(w.fresh, lagSample{user: user, start: start, acked: time.Now()})
			w.mu.Unlock()
		}
		return class, sample
	}
}

// finish tells run that no sample is added any more: it looks for those not
// yet seen for at most settle.
func (w *watcher) finish(settle time.Duration) {
	w.mu.Lock()
	w.giveUp = time.Now().Add(settle)
	w.mu.Unlock()
}

// take appends the samples added since the last take to pending, and
// returns when run gives up (zero: more samples may come).
func (w *watcher) take(pending []lagSample) ([]lagSample, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pending = append(pending, w.fresh...)
	w.fresh = w.fresh[:0]
	return pending, w.giveUp
}

// run polls the added samples every lagTick until ctx ends or, after
// finish, every sample was seen or its settle has passed; the samples not
// seen by then are counted in unseen.
func (w *watcher) run(ctx context.Context) (watchResult, error) {
	var res watchResult
	var pending []lagSample
	var giveUp time.Time
	t := time.NewTicker(lagTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-t.C:
		}
		// giveUp comes with the samples: once it is set, every sample is
		// in pending.
		if pending, giveUp = w.take(pending); !giveUp.IsZero() && (len(pending) == 0 || time.Now().After(giveUp)) {
			res.unseen = len(pending)
			slices.Sort(res.afterAck)
			slices.Sort(res.afterStart)
			return res, nil
		}
		if len(pending) > 0 {
			pending = w.poll(ctx, pending, &res)
		}
	}
}

// poll asks Redis, in one pipeline, for the scores of the oldest lagPollBatch
// pending users in the waiting line and among the holders, records those
// present as seen at the time the answer came back (so a lag is late by at
// most one tick plus one round trip), and returns the rest, oldest first.
func (w *watcher) poll(ctx context.Context, pending []lagSample, res *watchResult) []lagSample {
	batch := pending[:min(len(pending), lagPollBatch)]
	pctx, cancel := context.WithTimeout(ctx, lagPollTimeout)
	defer cancel()
	p := w.rc.Pipeline()
	cmds := make([][2]*redis.FloatCmd, len(batch))
	for i, s := range batch {
		cmds[i] = [2]*redis.FloatCmd{p.ZScore(pctx, redisstore.WaitingKey(benchEvent), s.user), p.ZScore(pctx, redisstore.HoldersKey(benchEvent), s.user)}
	}
	_, _ = p.Exec(pctx) // the errors are each command's
	now := time.Now()
	res.polls++
	failed := false
	// keep reuses pending's array: it never grows past the sample it is
	// reading, and append moves the untouched tail down (memmove).
	keep := pending[:0]
	for i, s := range batch {
		s.polls++
		// nil when either found the user, redis.Nil when neither did, else
		// the first other error.
		err := cmds[i][0].Err()
		if errors.Is(err, redis.Nil) || cmds[i][1].Err() == nil {
			err = cmds[i][1].Err()
		}
		switch {
		case err == nil:
			res.afterAck = append(res.afterAck, now.Sub(s.acked))
			res.afterStart = append(res.afterStart, now.Sub(s.start))
			if s.polls == 1 {
				res.atFirst++
			}
		case errors.Is(err, redis.Nil):
			keep = append(keep, s)
		default:
			keep = append(keep, s)
			failed, res.lastErr = true, err
		}
	}
	if failed {
		res.pollErrors++
	}
	return append(keep, pending[len(batch):]...)
}

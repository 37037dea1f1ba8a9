package loadgen

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// lagSample is one followed join: its user, when its request started, when
// its 202 came back and when the poller first saw it in the waiting line.
type lagSample struct {
	user               string
	start, acked, seen time.Time
	polls              int // polls that asked for it
}

// watcher finds when followed users appear in the waiting line, or among
// the holders when the fast track admitted them as they were written. add may be
// called from any goroutine; run polls from one goroutine, and only one run
// may be active at a time.
type watcher struct {
	rc redis.UniversalClient
	// keys are where a join becomes visible: the bench event's waiting
	// line, and its holders (the fast track admits a join that finds room
	// as it is written).
	keys []string

	mu    sync.Mutex
	fresh []lagSample // added, not yet taken by run
}

// watchResult is what one run of a watcher found.
type watchResult struct {
	seen       []lagSample // in the order they were seen
	atFirst    int         // of seen, those present at their first poll
	unseen     int         // still not seen when run gave up
	polls      int         // pipelines sent
	pollErrors int         // pipelines with an error other than "no such member"
	lastErr    error       // the last of those errors
}

// follow is the request of the open-loop run: a join to url of a user
// named after prefix, the worker and n, every every-th one answered 202
// handed to w with the times it started and was answered.
func (w *watcher) follow(c *http.Client, url, prefix string, every int64) request {
	var answered atomic.Int64
	return func(ctx context.Context, wk *worker, n int) (string, string) {
		user := userOf(prefix, wk, n)
		start := time.Now()
		class, sample := join(ctx, c, url, user)
		if class == "" && answered.Add(1)%every == 0 {
			w.add(lagSample{user: user, start: start, acked: time.Now()})
		}
		return class, sample
	}
}

// add hands s to the poller.
func (w *watcher) add(s lagSample) {
	w.mu.Lock()
	w.fresh = append(w.fresh, s)
	w.mu.Unlock()
}

// take appends the samples added since the last take to pending.
func (w *watcher) take(pending []lagSample) []lagSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	pending = append(pending, w.fresh...)
	w.fresh = w.fresh[:0]
	return pending
}

// run polls the added samples every lagTick until ctx ends or, once sent is
// closed (nothing more will be added), every sample was seen or settle has
// passed; the samples not seen by then are counted in unseen.
func (w *watcher) run(ctx context.Context, sent <-chan struct{}, settle time.Duration) (watchResult, error) {
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
		// sent is looked at before take, so a closed sent means every
		// sample is in pending.
		finished := false
		select {
		case <-sent:
			finished = true
		default:
		}
		pending = w.take(pending)
		if finished {
			if giveUp.IsZero() {
				giveUp = time.Now().Add(settle)
			}
			if len(pending) == 0 || time.Now().After(giveUp) {
				res.unseen = len(pending)
				return res, nil
			}
		}
		if len(pending) > 0 {
			pending = w.poll(ctx, pending, &res)
		}
	}
}

// visible returns nil when one of a user's ZSCOREs found them, redis.Nil
// when none did, else the first other error.
func visible(cmds []*redis.FloatCmd) error {
	var other error
	for _, c := range cmds {
		switch err := c.Err(); {
		case err == nil:
			return nil
		case !errors.Is(err, redis.Nil) && other == nil:
			other = err
		}
	}
	if other != nil {
		return other
	}
	return redis.Nil
}

// poll asks Redis, in one pipeline, for the scores of the oldest lagPollBatch
// pending users, records those present as seen at the time the answer came
// back (so a lag is late by at most one tick plus one round trip), and
// returns the rest, oldest first.
func (w *watcher) poll(ctx context.Context, pending []lagSample, res *watchResult) []lagSample {
	batch := pending[:min(len(pending), lagPollBatch)]
	pctx, cancel := context.WithTimeout(ctx, lagPollTimeout)
	defer cancel()
	p := w.rc.Pipeline()
	cmds := make([][]*redis.FloatCmd, len(batch))
	for i, s := range batch {
		for _, k := range w.keys {
			cmds[i] = append(cmds[i], p.ZScore(pctx, k, s.user))
		}
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
		switch err := visible(cmds[i]); {
		case err == nil:
			s.seen = now
			res.seen = append(res.seen, s)
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

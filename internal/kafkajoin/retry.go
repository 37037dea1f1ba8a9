package kafkajoin

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/waitq/waitq/internal/clock"
)

// retry calls f until it succeeds or ctx ends, with exponential backoff and
// jitter, keeping health false while it fails; each attempt is bounded by
// AttemptTimeout (withTimeout, the innermost layer). It never gives up on
// its own: a message that was fetched is written or stays uncommitted.
func (c *Consumer) retry(ctx context.Context, what string, health *atomic.Bool, f func(context.Context) error) bool {
	attempt := withTimeout(c.cfg.AttemptTimeout, f)
	delay := c.cfg.RetryMin
	for n := 1; ; n++ {
		err := attempt(ctx)
		if err == nil {
			health.Store(true)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		health.Store(false)
		c.retries.Add(1)
		c.log.Warn("retrying", "what", what, "attempt", n, "backoff", delay, "err", err)
		// Full jitter over the upper half keeps many consumers from
		// hammering a recovering server in step.
		if !clock.Sleep(ctx, delay/2+rand.N(delay/2+1)) {
			return false
		}
		delay = min(delay*2, c.cfg.RetryMax)
	}
}

// withTimeout bounds each call of f to d: a server that hangs counts as a
// failed attempt, so it is retried and reported unready.
func withTimeout(d time.Duration, f func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return f(ctx)
	}
}

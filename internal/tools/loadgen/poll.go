package loadgen

import (
	"context"
	"time"

	"github.com/waitq/waitq/internal/clock"
)

// poll calls check every interval until it reports done, ctx ends or within
// has passed since poll began. It returns the error of the check that
// reported done (nil: the condition holds), ctx's error, or what expired
// makes of the last check's error.
func poll(ctx context.Context, within, interval time.Duration, check func() (done bool, err error), expired func(last error) error) error {
	deadline := time.Now().Add(within)
	for {
		done, err := check()
		if done {
			return err
		}
		if time.Now().After(deadline) {
			return expired(err)
		}
		if !clock.SleepUntil(ctx, time.Now().Add(interval)) {
			return ctx.Err()
		}
	}
}

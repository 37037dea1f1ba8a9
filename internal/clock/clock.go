// Package clock holds the one way to wait on time: Sleep and SleepUntil wait
// unless a context ends first. The product (the consumer's backoff, the
// gateway's status rounds) and the tools (loadgen's pacing) both import it;
// it imports only the standard library. Its functions are safe for
// concurrent use.
package clock

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, whichever is first. It reports whether
// the full time passed: false when ctx ended first. A d of zero or less does
// not wait and reports whether ctx is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// SleepUntil is Sleep until the wall clock reaches t.
func SleepUntil(ctx context.Context, t time.Time) bool {
	return Sleep(ctx, time.Until(t))
}

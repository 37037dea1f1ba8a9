package loadgen

import (
	"fmt"
	"time"
)

// Bounds of the settings more than one measurement has.
const (
	maxDuration    = 120 * time.Second
	maxRequests    = 5_000_000
	maxConcurrency = 1024
)

// loadFlagErrors checks the -c and -d flags that joins and lag share.
func loadFlagErrors(concurrency int, duration time.Duration) []error {
	var errs []error
	if concurrency < 1 || concurrency > maxConcurrency {
		errs = append(errs, fmt.Errorf("-c %d: must be between 1 and %d", concurrency, maxConcurrency))
	}
	if duration <= 0 || duration > maxDuration {
		errs = append(errs, fmt.Errorf("-d %s: must be positive and at most %s", duration, maxDuration))
	}
	return errs
}

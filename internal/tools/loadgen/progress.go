package loadgen

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// startProgress prints the progress line of HTTP workers to w once a second
// (answers 202 so far, in the last second, errors) until the returned stop is
// called.
func startProgress(w io.Writer, label string, start time.Time, done, failed *atomic.Int64) (stop func()) {
	var last int64 // read and written by the printing goroutine only
	return startProgressLine(w, func() string {
		n := done.Load()
		line := fmt.Sprintf("  %-24s %5.1fs  ok %8d  %7.0f/s  errors %d", label, time.Since(start).Seconds(), n, float64(n-last), failed.Load())
		last = n
		return line
	})
}

// startProgressLine prints line() to w once a second until the returned stop
// is called; stop may be called more than once.
func startProgressLine(w io.Writer, line func() string) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				fmt.Fprintln(w, line())
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
		})
	}
}

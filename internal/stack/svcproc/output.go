package svcproc

import (
	"bytes"
	"io"
	"sync"
)

// output is where a Proc's stdout and stderr go: it keeps the first limit
// bytes (0: all), passes the same bytes to echo when set, and counts the
// rest, so a service logging every request can neither flood its owner's
// output nor its memory. Safe for concurrent use.
type output struct {
	echo  io.Writer
	limit int

	mu        sync.Mutex
	kept      bytes.Buffer
	discarded int
}

// Write implements io.Writer; it never fails.
func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	if o.limit > 0 {
		n = min(n, o.limit-o.kept.Len())
	}
	if n > 0 {
		o.kept.Write(p[:n])
		if o.echo != nil {
			_, _ = o.echo.Write(p[:n])
		}
	}
	o.discarded += len(p) - n
	return len(p), nil
}

// String returns the bytes kept.
func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.kept.String()
}

// Discarded returns the bytes neither kept nor echoed.
func (o *output) Discarded() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.discarded
}

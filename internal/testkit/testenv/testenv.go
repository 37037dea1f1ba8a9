// Package testenv holds what every integration test needs: the rule that a
// missing dependency skips on a laptop but fails in CI, and unique names so
// tests can run in parallel against shared servers.
package testenv

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/stack/svcproc"
)

// Strict reports whether missing dependencies must fail tests rather than
// skip them: in CI (CI=true) or when WAITQ_TEST_STRICT=1.
func Strict() bool {
	return os.Getenv("CI") == "true" || os.Getenv("WAITQ_TEST_STRICT") == "1"
}

// Unavailable stops the test because a dependency is missing: a failure in
// strict mode, a skip otherwise.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if Strict() {
		tb.Fatalf("required test dependency missing (CI=true): "+format, args...)
	}
	tb.Skipf("test dependency missing: "+format, args...)
}

// EventID returns an event id unique to this run of tb, derived from its name
// so that keys left in a server can be traced to their test.
func EventID(tb testing.TB) string {
	tb.Helper()
	var b strings.Builder
	for _, c := range tb.Name() {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	return name + "-" + hex.EncodeToString(r[:])
}

// Eventually polls cond every 20 ms until it holds or d passes; then it fails
// the test with cond's last description of what it saw.
func Eventually(tb testing.TB, d time.Duration, cond func() (ok bool, saw string)) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("condition not met within %v: %s", d, saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Logger returns a slog.Logger writing to tb.Logf, so logs show with the
// failing test and nowhere else.
// Lines written after the test's cleanups have run are dropped (testing
// panics on a Logf after the test ends).
func Logger(tb testing.TB) *slog.Logger {
	w := &tbWriter{tb: tb}
	tb.Cleanup(func() { w.done.Store(true) })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tbWriter struct {
	tb   testing.TB
	done atomic.Bool
}

func (w *tbWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.tb.Logf("%s", strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// Buffer collects output written from several goroutines (a logger's, a
// program's) for a test to read.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// FreeAddr returns a free loopback address (svcproc.FreeAddr), failing tb
// when there is none.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	addr, err := svcproc.FreeAddr()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

// Package testenv holds what every integration test needs: the rule that a
// missing dependency skips on a laptop but fails in CI, and unique names so
// tests can run in parallel against shared servers.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
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

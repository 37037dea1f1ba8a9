package queue_test

import (
	"testing"

	"github.com/waitq/waitq/internal/queue"
)

// LineKey orders the line as the sorted set does: by score, then by the
// user id's bytes (so "B" before "a", "u-1" before "u0", whatever a locale
// would collate).
func TestLineKeyLess(t *testing.T) {
	for _, tc := range []struct {
		a, b queue.LineKey
		want bool
	}{
		{queue.LineKey{Score: 1, User: "z"}, queue.LineKey{Score: 2, User: "a"}, true},
		{queue.LineKey{Score: 2, User: "a"}, queue.LineKey{Score: 1, User: "z"}, false},
		{queue.LineKey{Score: 1000, User: "B"}, queue.LineKey{Score: 1000, User: "a"}, true},
		{queue.LineKey{Score: 1000, User: "u-1"}, queue.LineKey{Score: 1000, User: "u0"}, true},
		{queue.LineKey{Score: 1000, User: "a"}, queue.LineKey{Score: 1000, User: "a"}, false},
	} {
		if got := tc.a.Less(tc.b); got != tc.want {
			t.Errorf("%v.Less(%v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

package queue_test

import (
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/queue"
)

func TestCheckAddress(t *testing.T) {
	for _, ok := range []string{"a@example.com", "first.last+tag@sub.example.co.kr", "x@localhost"} {
		if err := queue.CheckAddress(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for name, bad := range map[string]string{
		"empty":           "",
		"no at":           "example.com",
		"no domain":       "a@",
		"no local part":   "@example.com",
		"a name":          "Eve <eve@example.com>",
		"angle brackets":  "<eve@example.com>",
		"a space":         "eve @example.com",
		"CRLF injection":  "eve@example.com\r\nBcc: all@example.com",
		"LF injection":    "eve@example.com\nBcc: all@example.com",
		"oversized":       strings.Repeat("a", 250) + "@example.com",
		"non-ASCII":       "ünï@example.com",
		"two addresses":   "a@example.com, b@example.com",
		"a comment":       "a@example.com (me)",
		"a tab":           "a@example.com\t",
		"a NUL":           "a@example.com\x00",
		"just an at sign": "@",
	} {
		err := queue.CheckAddress(bad)
		if queue.ErrorCode(err) != queue.CodeInvalidEmail {
			t.Errorf("%s %q: %v; want invalid_email", name, bad, err)
		} else if len(bad) > 3 && strings.Contains(err.Error(), bad) {
			t.Errorf("%s: the error repeats the address: %v", name, err)
		}
	}
}

func TestAwayNotifyAhead(t *testing.T) {
	a := queue.DefaultAway()
	for n, ok := range map[int]bool{0: true, 50: true, queue.MaxNotifyAhead: true, -1: false, queue.MaxNotifyAhead + 1: false} {
		a.NotifyAhead = n
		if err := a.Validate(); (err == nil) != ok {
			t.Errorf("notifyAhead %d: %v", n, err)
		}
	}
}

package httpkit

import (
	"testing"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestEveryCodeHasAStatus: the one table from code to HTTP status holds
// every code queue declares, and nothing else.
func TestEveryCodeHasAStatus(t *testing.T) {
	declared := testenv.ErrorCodes(t)
	for _, c := range declared {
		if _, ok := statusOf[queue.Code(c)]; !ok {
			t.Errorf("code %s has no HTTP status in statusOf", c)
		}
	}
	if len(statusOf) != len(declared) {
		t.Errorf("statusOf has %d codes, queue declares %d", len(statusOf), len(declared))
	}
}

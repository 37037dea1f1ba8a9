package loadgen

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/testkit/testredis"
)

// TestTurnsRunsASmallSale: a small simulated sale ends with everyone done,
// nobody back in time losing the turn, and every figure in its report.
func TestTurnsRunsASmallSale(t *testing.T) {
	r := testredis.Start(t)
	var stdout, stderr bytes.Buffer
	err := RunTurns(context.Background(), []string{"-redis", r.URL(), "-people", "120", "-capacity", "10", "-arrival", "30s"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("turns: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"occupancy while people wait: mean", "lost the turn: 0 (goal 0)", "no-show share", "estimate error"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if err := RunTurns(context.Background(), []string{"-redis", r.URL(), "-away", "80", "-gone", "30"}, &stdout, &stderr); err == nil {
		t.Error("-away 80 -gone 30 (over 100 percent) taken")
	}
}

package testdraw

import (
	"testing"

	"github.com/waitq/waitq/pkg/draw"
)

// TestScoreFollowsTheService checks the rule as written here against the
// service's own: both must give every user the same score.
func TestScoreFollowsTheService(t *testing.T) {
	s, err := draw.NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"a", "bob", "user-123456", "ü"} {
		got, err := Score(s.Hex(), u)
		if err != nil || got != draw.Score(s, u) {
			t.Fatalf("%s: %d %v, the service gives %d", u, got, err, draw.Score(s, u))
		}
	}
	if _, err := Score("abc", "u"); err == nil {
		t.Fatal("a short seed was taken")
	}
}

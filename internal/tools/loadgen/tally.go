package loadgen

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// tally counts failures by class and keeps the first example of each. It is
// not safe for concurrent use; its zero value is an empty tally that only
// reads.
type tally struct {
	counts  map[string]int    // class → count
	samples map[string]string // class → first example
}

// newTally returns an empty tally.
func newTally() tally {
	return tally{counts: map[string]int{}, samples: map[string]string{}}
}

// add counts one failure of class, keeping sample if it is the first.
func (t tally) add(class, sample string) {
	if t.counts[class]++; t.counts[class] == 1 {
		t.samples[class] = sample
	}
}

// addAll adds o's failures to t; t keeps its own example of a class it had.
func (t tally) addAll(o tally) {
	for class, c := range o.counts {
		if t.counts[class] == 0 {
			t.samples[class] = o.samples[class]
		}
		t.counts[class] += c
	}
}

// total returns the number of failures.
func (t tally) total() int {
	n := 0
	for _, c := range t.counts {
		n += c
	}
	return n
}

// classes returns the failure classes, sorted.
func (t tally) classes() []string {
	return slices.Sorted(maps.Keys(t.counts))
}

// first returns the first class with its example, "" when there is none.
func (t tally) first() string {
	for _, class := range t.classes() {
		return class + ": " + report.OneLine(t.samples[class])
	}
	return ""
}

// print prints one line a class, sorted: head, then "class: count, e.g.
// example".
func (t tally) print(w io.Writer, head string) {
	for _, class := range t.classes() {
		fmt.Fprintf(w, "%s%s: %d, e.g. %s\n", head, class, t.counts[class], report.OneLine(t.samples[class]))
	}
}

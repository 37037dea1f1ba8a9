package loadgen

import (
	"cmp"
	"fmt"
	"io"
	"slices"
)

// medianRound returns the round of the median ratio (of an even number,
// the lower of the two middle ones).
func medianRound[R interface{ ratio() float64 }](rounds []R) R {
	sorted := slices.Clone(rounds)
	slices.SortFunc(sorted, func(a, b R) int { return cmp.Compare(a.ratio(), b.ratio()) })
	return sorted[(len(sorted)-1)/2]
}

// printRounds prints the ratio of each round of alternating measurements
// (nothing for one round) and which the figures after it are.
func printRounds[R interface{ ratio() float64 }](w io.Writer, table, ratio string, rounds []R) {
	if len(rounds) < 2 {
		return
	}
	fmt.Fprintf(w, "%s  rounds  %s", table, ratio)
	for _, r := range rounds {
		fmt.Fprintf(w, " %.2f", r.ratio())
	}
	fmt.Fprintf(w, "  (alternating; the rows below are the round of the median, %.2f)\n", medianRound(rounds).ratio())
}

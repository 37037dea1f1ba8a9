package loadgen

import (
	"cmp"
	"fmt"
	"io"
	"slices"
)

// maxRounds bounds -rounds, of ingest and joins: how many times a
// measurement and its baseline are taken, alternating.
const maxRounds = 9

// roundsError checks a -rounds flag.
func roundsError(rounds int) []error {
	if rounds < 1 || rounds > maxRounds {
		return []error{fmt.Errorf("-rounds %d: must be between 1 and %d", rounds, maxRounds)}
	}
	return nil
}

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

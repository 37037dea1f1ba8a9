package loadgen

import (
	"cmp"
	"fmt"
	"io"
	"slices"
)

// median returns the element of xs whose key is the median (of an even
// number, the lower of the two middle ones).
func median[T any](xs []T, key func(T) float64) T {
	sorted := slices.Clone(xs)
	slices.SortFunc(sorted, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return sorted[(len(sorted)-1)/2]
}

// medianRound returns the round of the median ratio.
func medianRound[R interface{ ratio() float64 }](rounds []R) R { return median(rounds, R.ratio) }

// printRounds prints head and the ratio of each round of alternating
// measurements (nothing for one round), then tail with the median ratio.
func printRounds[R any](w io.Writer, head string, rounds []R, ratio func(R) float64, tail string) {
	if len(rounds) < 2 {
		return
	}
	fmt.Fprint(w, head)
	for _, r := range rounds {
		fmt.Fprintf(w, " %.2f", ratio(r))
	}
	fmt.Fprintf(w, tail, ratio(median(rounds, ratio)))
}

// medianTail is the tail of printRounds of the tables whose rows are the
// median round's.
const medianTail = "  (alternating; the rows below are the round of the median, %.2f)\n"

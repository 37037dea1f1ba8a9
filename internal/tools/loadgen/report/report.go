// Package report prints the plain-text lines every loadgen measurement shares
// and formats its figures. The summary rows are parsed by scripts/bench.sh
// (and scripts/bench-gateway.sh writes one of the same form): their format is
// a contract. The functions are safe for concurrent use on different writers.
package report

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"time"
)

// Machine prints the header of a measurement: the command, the time, and the
// facts of this machine the numbers depend on.
func Machine(w io.Writer, command string) {
	fmt.Fprintf(w, "loadgen %s  %s\n", command, time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "machine  NumCPU %d  GOMAXPROCS %d  %s %s/%s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Summary prints one row of the summary table that scripts/bench.sh puts at
// the top of bench/RESULTS.md: what was measured, the figure, the baseline
// measured in the same run, their ratio (none when base is 0) and the goal.
func Summary(w io.Writer, what, figure, baseline string, fig, base float64, goal string) {
	ratio := "—"
	if base > 0 {
		ratio = fmt.Sprintf("%.2f", fig/base)
	}
	fmt.Fprintf(w, "summary | %s | %s | %s | %s | %s |\n", what, figure, baseline, ratio, goal)
}

// Millis formats d in milliseconds, such as 1.5ms.
func Millis(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

// OneLine shortens s to one line of at most 200 bytes for the table.
func OneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Bytes formats a size in KiB or MiB.
func Bytes(b float64) string {
	if math.Abs(b) >= 1<<20 {
		return fmt.Sprintf("%.1fMiB", b/(1<<20))
	}
	return fmt.Sprintf("%.1fKiB", b/(1<<10))
}

package loadgen

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// turnsResult is what one simulated sale measured.
type turnsResult struct {
	people, capacity        int
	simulated, wall         time.Duration
	called, lapsed, swept   int
	admitted, noShows, lost int
	occupancy               []float64 // in the shop ÷ capacity, each second people waited
	etaErr                  []float64 // |actual − estimate| ÷ actual of each estimate sampled
	etaSettled              []float64 // of them, those told once the slots had turned over twice
}

// etaErrors fills r.etaErr from the people who never stepped away: each
// estimate they were told (one every turnsETAEvery of their wait) against
// the wait they still had.
func (s *turnsSim) etaErrors() {
	for _, p := range s.people {
		if p.awayTo > 0 || p.goneAt > 0 || p.admittedAt == 0 {
			continue
		}
		for _, e := range p.etas {
			actual := float64(p.admittedAt - e.at)
			if actual < float64(turnsMinWait.Milliseconds()) {
				continue
			}
			err := math.Abs(actual-float64(e.eta)) / actual
			s.res.etaErr = append(s.res.etaErr, err)
			if e.settled {
				s.res.etaSettled = append(s.res.etaSettled, err)
			}
		}
	}
}

// share is the p-quantile of xs (nearest rank; 0 when empty).
func share(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[max(0, int(math.Ceil(p*float64(len(s))))-1)]
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

// String is the simulated sale's report.
func (r turnsResult) String() string {
	noShow := 0.0
	if r.admitted > 0 {
		noShow = float64(r.noShows) / float64(r.admitted)
	}
	return fmt.Sprintf(`turns: people=%d capacity=%d simulated %s in %.1fs
  occupancy while people wait: mean %.2f, p10 %.2f of capacity (goal >= 0.90)
  came back within the claim window (or the keep time) and lost the turn: %d (goal 0)
  called %d, lapsed %d, swept %d; admitted %d
  no-show share %.2f of the admitted
  estimate error |actual - etaSeconds| / actual: p50 %.0f%%, p90 %.0f%% over %d estimates (one each %s of a wait; remaining waits of %s or more) (goal p90 <= 25%%)
    told once the slots had turned over twice: p50 %.0f%%, p90 %.0f%% over %d`,
		r.people, r.capacity, r.simulated.Round(time.Second), r.wall.Seconds(),
		mean(r.occupancy), share(r.occupancy, 0.10),
		r.lost, r.called, r.lapsed, r.swept, r.admitted, noShow,
		100*share(r.etaErr, 0.5), 100*share(r.etaErr, 0.9), len(r.etaErr), turnsETAEvery, turnsMinWait,
		100*share(r.etaSettled, 0.5), 100*share(r.etaSettled, 0.9), len(r.etaSettled))
}

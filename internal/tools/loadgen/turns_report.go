package loadgen

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// etaErrors fills s.etaErr from the people who never stepped away: each
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
			s.etaErr = append(s.etaErr, err)
			if e.settled {
				s.etaSettled = append(s.etaSettled, err)
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

// mean is the mean of xs (0 when empty).
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
func (s *turnsSim) String() string {
	noShow := 0.0
	if s.admitted > 0 {
		noShow = float64(s.noShows) / float64(s.admitted)
	}
	return fmt.Sprintf(`turns: people=%d capacity=%d simulated %s in %.1fs
  occupancy while people wait: mean %.2f, p10 %.2f of capacity (goal >= 0.90)
  came back within the claim window (or the keep time) and lost the turn: %d (goal 0)
  called %d, lapsed %d, swept %d; admitted %d
  no-show share %.2f of the admitted
  estimate error |actual - etaSeconds| / actual: p50 %.0f%%, p90 %.0f%% over %d estimates (one each %s of a wait; remaining waits of %s or more) (goal p90 <= 25%%)
    told once the slots had turned over twice: p50 %.0f%%, p90 %.0f%% over %d`,
		s.cfg.people, s.cfg.capacity, s.simulated.Round(time.Second), s.wall.Seconds(),
		mean(s.occupancy), share(s.occupancy, 0.10),
		s.lost, s.called, s.lapsed, s.swept, s.admitted, noShow,
		100*share(s.etaErr, 0.5), 100*share(s.etaErr, 0.9), len(s.etaErr), turnsETAEvery, turnsMinWait,
		100*share(s.etaSettled, 0.5), 100*share(s.etaSettled, 0.9), len(s.etaSettled))
}

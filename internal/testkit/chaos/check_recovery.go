package chaos

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// checkGaps finds the longest gaps in statuses, and those no fault excuses.
func (r *Report) checkGaps(h *History, cfg Config) {
	for _, g := range h.Gaps {
		d := g.To.Sub(g.From)
		if d > r.LongestGap.To.Sub(r.LongestGap.From) {
			r.LongestGap = g
		}
		if excused(h.Faults, g, cfg.FaultGrace) {
			continue
		}
		if d > r.LongestUnexcusedGap.To.Sub(r.LongestUnexcusedGap.From) {
			r.LongestUnexcusedGap = g
		}
		if d > cfg.GapLimit {
			r.GapViolations = append(r.GapViolations, fmt.Sprintf("%s/%s: no status for %v from %s, no fault on a gateway or Redis",
				g.Event, g.User, d.Round(time.Millisecond), g.From.Format("15:04:05.000")))
		}
	}
}

func excused(faults []Fault, g Gap, grace time.Duration) bool {
	for _, f := range faults {
		if f.Skipped || !f.stallsStatuses() {
			continue
		}
		end := f.Healed.Add(grace)
		if f.Healed.IsZero() || g.From.Before(end) && g.To.After(f.Start) {
			return true
		}
	}
	return false
}

// checkRecovery measures each fault's recovery from the readiness changes
// and the canaries.
func (r *Report) checkRecovery(h *History) {
	ready := slices.Clone(h.Readiness)
	slices.SortFunc(ready, func(a, b Ready) int { return a.At.Compare(b.At) })
	canaries := slices.Clone(h.Canaries)
	slices.SortFunc(canaries, func(a, b Canary) int { return a.Sent.Compare(b.Sent) })
	r.Canaries = len(canaries)
	for _, c := range canaries {
		if !c.Seen.IsZero() {
			r.CanariesSeen++
		}
	}
	for _, f := range h.Faults {
		if f.Skipped {
			r.FaultsSkipped[f.Kind]++
			continue
		}
		r.FaultsByKind[f.Kind]++
		if f.Err != "" {
			r.FaultErrors = append(r.FaultErrors, fmt.Sprintf("%s %s at %s: %s", f.Kind, f.Target, f.Start.Format("15:04:05.000"), f.Err))
		}
		if f.Healed.IsZero() {
			continue
		}
		rec := Recovery{Fault: f, Ready: -1, Canary: -1}
		// Ready: 0 if it was ready at the heal, else its first ready after.
		polled, okAtHeal := false, false
		for _, x := range ready {
			if x.Target != f.Target {
				continue
			}
			polled = true
			if !x.At.After(f.Healed) {
				okAtHeal = x.OK
				continue
			}
			if okAtHeal {
				break
			}
			if x.OK {
				rec.Ready = x.At.Sub(f.Healed)
				break
			}
		}
		if !polled || okAtHeal {
			rec.Ready = 0
		}
		i := sort.Search(len(canaries), func(i int) bool { return !canaries[i].Sent.Before(f.Healed) })
		for _, c := range canaries[i:] {
			if !c.Seen.IsZero() {
				rec.Canary = c.Seen.Sub(f.Healed)
				break
			}
		}
		rec.Recovered = rec.Ready >= 0 && rec.Canary >= 0
		if !rec.Recovered {
			r.Unrecovered = append(r.Unrecovered, fmt.Sprintf("%s %s healed at %s: ready after %v, canary after %v",
				f.Kind, f.Target, f.Healed.Format("15:04:05.000"), rec.Ready, rec.Canary))
		}
		r.Recoveries = append(r.Recoveries, rec)
	}
}

package chaos

import (
	"fmt"
	"slices"
	"time"
)

// rateSpan is how far apart two counter samples may be to be checked as a
// window: the burst matters in short windows, the rate in all.
const rateSpan = time.Minute

// checkRate proves the rate (api.md: in any window of W minutes at most
// rate × W + burst admissions, burst = max(1, ⌈rate / 12⌉)) over the
// sampled admittedTotal of each event: for two samples a and b at most
// rateSpan apart, when every rate possibly in force between them is a
// limit (none is 0), admittedTotal rose by at most maxRate × W + maxBurst,
// W from a's read to b's answer widened by the longest fault: an admission
// step computes its "now" before it runs, and a gateway paused or cut off
// between the two may run it with a "now" that old, refilling the bucket
// from there. Windows that overlap a rebuild are not checked: it writes
// admittedTotal back from the log and restarts the bucket empty. The first
// window over the rate is reported, once per event.
func (r *Report) checkRate(h *History, cfg Config) {
	byEvent := map[string][]AdmittedCount{}
	for _, c := range h.Counts {
		byEvent[c.Event] = append(byEvent[c.Event], c)
	}
	rb := rebuilds(h)
	longest := longestFault(h)
	for _, e := range cfg.Events {
		counts := byEvent[e.ID]
		slices.SortStableFunc(counts, func(a, b AdmittedCount) int { return a.At.Compare(b.At) })
		in := settingsOf(e, h.Admin)
	windows:
		for i, a := range counts {
			for _, b := range counts[i+1:] {
				if b.At.Sub(a.Sent) > rateSpan {
					break
				}
				if !b.Sent.After(a.At) || overlaps(rb, a.Sent, b.At) {
					continue
				}
				rates := possible(in.rate, a.Sent.Add(-longest), b.At)
				if slices.Contains(rates, 0) {
					continue
				}
				rate := slices.Max(rates)
				w := b.At.Sub(a.Sent) + longest
				allowed := float64(rate)*w.Minutes() + float64(burst(rate))
				r.RateWindows++
				if n := b.Total - a.Total; float64(n) > allowed {
					r.OverRate = append(r.OverRate, fmt.Sprintf("%s: %d admitted between %s and %s, the rate in force (at most %d a minute) allows %.1f",
						e.ID, n, a.Sent.Format(time.RFC3339Nano), b.At.Format(time.RFC3339Nano), rate, allowed))
					break windows // reported once per event
				}
			}
		}
	}
}

// burst is the token bucket's size for rate (admission.lua).
func burst(rate int64) int64 { return max(1, (rate+11)/12) }

// longestFault is how long the longest fault lasted (a day when one never
// healed).
func longestFault(h *History) time.Duration {
	var longest time.Duration
	for _, f := range h.Faults {
		switch {
		case f.Skipped:
		case f.Healed.IsZero():
			longest = max(longest, 24*time.Hour)
		default:
			longest = max(longest, f.Healed.Sub(f.Start))
		}
	}
	return longest
}

// overlaps reports whether (from, to) meets one of the spans.
func overlaps(spans [][2]time.Time, from, to time.Time) bool {
	return slices.ContainsFunc(spans, func(s [2]time.Time) bool { return from.Before(s[1]) && to.After(s[0]) })
}

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
// limit (none is 0; a step reads the rate when it runs), admittedTotal rose
// by at most maxRate × (W + slack) + maxBurst, W from a's read to b's
// answer. The slack is a second, or the longest fault near the window: an
// admission step computes its "now" before it runs, and one sent by a
// service paused or cut off (or held by a paused Redis) runs with a "now"
// that old, which refills the bucket from there when nothing touched it
// since. Windows that overlap a rebuild are not checked: it writes
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
				rates := possible(in.rate, a.Sent, b.At)
				if slices.Contains(rates, 0) {
					continue
				}
				rate := slices.Max(rates)
				w := b.At.Sub(a.Sent) + slack(h, a.Sent.Add(-longest), b.At)
				allowed := float64(rate)*w.Minutes() + float64(burst(rate))
				r.RateWindows++
				if n := b.Total - a.Total; float64(n) > allowed {
					r.OverRate = append(r.OverRate, fmt.Sprintf("%s: %d admitted between %s and %s, the rate in force (at most %d a minute) allows %.1f",
						e.ID, n, a.Sent.Format(time.RFC3339Nano), b.At.Format(time.RFC3339Nano), rate, allowed))
					break windows
				}
			}
		}
	}
}

// slack is how old an admission step's "now" may be when it runs within
// (from, to): a second, or the longest fault that overlaps the span (one
// never healed: a day).
func slack(h *History, from, to time.Time) time.Duration {
	s := time.Second
	for _, f := range h.Faults {
		healed := f.Healed
		if healed.IsZero() {
			healed = f.Start.Add(24 * time.Hour)
		}
		if !f.Skipped && f.Start.Before(to) && healed.After(from) {
			s = max(s, healed.Sub(f.Start))
		}
	}
	return s
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

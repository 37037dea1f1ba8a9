package chaos

import (
	"fmt"
	"slices"
	"time"
)

// holdWindow bounds how long before a moment the holders of that moment
// were admitted: a hold, plus the longest fault (an unrecorded hold lasts
// while the broker is down, and gets a whole hold once recorded), plus a
// margin for the record grace and the monitor's ticks.
func holdWindow(h *History, e EventSpec) time.Duration {
	return time.Duration(e.HoldMs)*time.Millisecond + longestFault(h) + 10*time.Second
}

// rebuilds are the spans in which Redis was emptied and written back: from
// the FLUSHALL to a second after the rebuild ended.
func rebuilds(h *History) [][2]time.Time {
	var w [][2]time.Time
	for _, f := range h.Faults {
		if f.Kind != Rebuild || f.Skipped {
			continue
		}
		end := f.Healed
		if end.IsZero() {
			end = time.Unix(1<<40, 0)
		}
		w = append(w, [2]time.Time{f.Start, end.Add(time.Second)})
	}
	return w
}

// checkHolders proves, over the sampled holders of each event, the capacity
// in force at each moment (api.md: a lowered capacity evicts nobody, the
// holders above it stay until they leave, but nobody new is admitted while
// holders ≥ capacity; a paused event admits nobody):
//   - no sample above every capacity possibly in force within the hold
//     window before it (holdWindow: the oldest a holder of that moment can
//     have been admitted);
//   - holders never rise between two samples past the largest capacity
//     possibly in force between them, nor at all while the event was
//     surely paused: a rise means an admission step ran in between, and
//     admit() leaves at most the capacity in force, and only when open.
//
// Across a rebuild (FLUSHALL, then waitq-rebuild writes the holders back)
// the holders may come back to what they were before it: there the sample
// after is held to the larger of that and the capacity.
func (r *Report) checkHolders(h *History, cfg Config) {
	byEvent := map[string][]Holders{}
	for _, s := range h.Holders {
		byEvent[s.Event] = append(byEvent[s.Event], s)
		r.MaxHolders[s.Event] = max(r.MaxHolders[s.Event], s.N)
	}
	rb := rebuilds(h)
	for _, e := range cfg.Events {
		samples := byEvent[e.ID]
		if len(samples) == 0 {
			continue
		}
		slices.SortStableFunc(samples, func(a, b Holders) int { return a.At.Compare(b.At) })
		in := settingsOf(e, h.Admin)
		window := holdWindow(h, e)
		var beforeRebuild int64 // the last sample before the rebuild under way
		for i, s := range samples {
			if c := in.maxCapacity(s.sent().Add(-window), s.At); s.N > c {
				r.OverCapacity = append(r.OverCapacity, fmt.Sprintf("%s: %d holders at %s, capacity in force at most %d", e.ID, s.N, s.At.Format(time.RFC3339Nano), c))
				continue // reported once
			}
			if i == 0 {
				continue
			}
			p := samples[i-1]
			from, to := p.sent(), s.At
			inRebuild := overlaps(rb, from, to)
			if !inRebuild {
				beforeRebuild = s.N
			}
			if s.N <= p.N {
				continue
			}
			c := in.maxCapacity(from, to)
			switch {
			case inRebuild:
				if s.N > max(beforeRebuild, c) {
					r.AdmittedOver = append(r.AdmittedOver, fmt.Sprintf("%s: %d holders after a rebuild at %s, %d before it, capacity in force at most %d",
						e.ID, s.N, s.At.Format("15:04:05.000"), beforeRebuild, c))
				}
			case !in.mayAdmit(from, to):
				r.AdmittedOver = append(r.AdmittedOver, fmt.Sprintf("%s: holders rose from %d to %d between %s and %s while the event was paused",
					e.ID, p.N, s.N, from.Format("15:04:05.000"), to.Format("15:04:05.000")))
			case s.N > c:
				r.AdmittedOver = append(r.AdmittedOver, fmt.Sprintf("%s: holders rose from %d to %d between %s and %s, capacity in force at most %d",
					e.ID, p.N, s.N, from.Format("15:04:05.000"), to.Format("15:04:05.000"), c))
			}
		}
	}
}

package chaos

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// readyGrace is how long after a fault on a service heals its not being
// ready is put down to the fault: a start, a group join, a reconnect to
// Redis and Kafka take seconds, not this long.
const readyGrace = 30 * time.Second

// Unready is how long one service was not ready as the poller saw it,
// beyond what the faults on it explain.
type Unready struct {
	Target string
	// Total is every not-ready stretch added up; Unexplained the part of
	// it outside the service's own faults and the readyGrace after each.
	Total, Unexplained time.Duration
	// Longest is the longest unexplained stretch, from LongestFrom.
	Longest     time.Duration
	LongestFrom time.Time
	// Why is the unexplained time by what the poller saw instead of a 200.
	Why map[string]time.Duration
}

// checkReadiness adds up each service's time not ready, and how much of it
// no fault on that service explains: a service down long after its fault
// healed is what left clients without a gateway, whatever else held.
func (r *Report) checkReadiness(h *History, end time.Time) {
	byTarget := map[string][]Ready{}
	for _, x := range h.Readiness {
		byTarget[x.Target] = append(byTarget[x.Target], x)
	}
	for _, t := range slices.Sorted(maps.Keys(byTarget)) {
		rs := byTarget[t]
		slices.SortFunc(rs, func(a, b Ready) int { return a.At.Compare(b.At) })
		u := Unready{Target: t, Why: map[string]time.Duration{}}
		var stretch time.Duration // the unexplained stretch running
		var stretchFrom time.Time
		for i, x := range rs {
			to := end
			if i+1 < len(rs) {
				to = rs[i+1].At
			}
			if x.OK || !to.After(x.At) {
				stretch = 0
				continue
			}
			u.Total += to.Sub(x.At)
			for _, p := range unexplained(h.Faults, t, x.At, to) {
				d := p[1].Sub(p[0])
				u.Unexplained += d
				u.Why[cmp.Or(x.Why, "not ready")] += d
				if stretch == 0 || !p[0].Equal(stretchFrom.Add(stretch)) {
					stretch, stretchFrom = 0, p[0]
				}
				stretch += d
				if stretch > u.Longest {
					u.Longest, u.LongestFrom = stretch, stretchFrom
				}
			}
		}
		if u.Total > 0 {
			r.Unready = append(r.Unready, u)
		}
	}
}

// lastReady is the time of the poller's last readiness change: a stretch
// not ready at the end lasts until then.
func lastReady(rs []Ready) time.Time {
	var last time.Time
	for _, x := range rs {
		if x.At.After(last) {
			last = x.At
		}
	}
	return last
}

// unexplained cuts [from, to) by the faults on target (each from its start
// to readyGrace after its heal; a fault never healed explains the rest) and
// returns the pieces left.
func unexplained(faults []Fault, target string, from, to time.Time) [][2]time.Time {
	pieces := [][2]time.Time{{from, to}}
	for _, f := range faults {
		if f.Skipped || f.Target != target || f.Start.IsZero() {
			continue
		}
		fEnd := f.Healed.Add(readyGrace)
		if f.Healed.IsZero() {
			fEnd = to
		}
		var next [][2]time.Time
		for _, p := range pieces {
			if !f.Start.Before(p[1]) || !fEnd.After(p[0]) {
				next = append(next, p)
				continue
			}
			if f.Start.After(p[0]) {
				next = append(next, [2]time.Time{p[0], f.Start})
			}
			if fEnd.Before(p[1]) {
				next = append(next, [2]time.Time{fEnd, p[1]})
			}
		}
		pieces = next
	}
	return pieces
}

// describeWhy lists the reasons of u by their time, longest first.
func (u Unready) describeWhy() string {
	whys := slices.SortedFunc(maps.Keys(u.Why), func(a, b string) int {
		return cmp.Or(cmp.Compare(u.Why[b], u.Why[a]), strings.Compare(a, b))
	})
	parts := make([]string, 0, 3)
	for _, w := range whys[:min(len(whys), 3)] {
		parts = append(parts, fmt.Sprintf("%s %s", strings.ReplaceAll(w, "|", "/"), seconds(u.Why[w])))
	}
	return strings.Join(parts, "; ")
}

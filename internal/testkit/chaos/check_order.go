package chaos

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/waitq/waitq/internal/testkit/testdraw"
)

// drawn reports whether score is a drop's drawn place (below every stamp).
func (e EventSpec) drawn(score int64) bool { return e.OpensAt > 0 && score < 0 }

// checkLines checks every sampled place: a stamp of the user's, or, in a
// drop, the score the draw gives the user, for a join before the opening.
func (r *Report) checkLines(h *History, specs map[string]EventSpec, stamps map[userKey][]int64, possible map[userKey]int, acked map[userKey]bool) {
	bad := map[userKey]bool{} // report each user once
	for _, l := range h.Lines {
		e := specs[l.Event]
		for _, p := range l.Members {
			k := userKey{l.Event, p.User}
			if bad[k] {
				continue
			}
			var why string
			switch {
			case possible[k] == 0:
				why = "in line but never joined"
			case e.drawn(p.Score):
				if e.Seed == "" {
					break // not revealed: only the opening's samples can be judged
				}
				want, err := testdraw.Score(e.Seed, p.User)
				if err != nil || want != p.Score {
					why = fmt.Sprintf("at drawn score %d, the draw gives %d (%v)", p.Score, want, err)
				} else if acked[k] && possible[k] == len(stamps[k]) && !slices.ContainsFunc(stamps[k], func(s int64) bool { return s < e.OpensAt }) {
					why = fmt.Sprintf("drawn, but joined at %v, after the opening %d", stamps[k], e.OpensAt)
				}
			case possible[k] == len(stamps[k]) && !slices.Contains(stamps[k], p.Score):
				why = fmt.Sprintf("at score %d, its joins were stamped %v", p.Score, stamps[k])
			}
			if why != "" {
				bad[k] = true
				r.ScoreViolations = append(r.ScoreViolations, fmt.Sprintf("%s/%s: %s", l.Event, p.User, why))
			}
		}
	}
}

// checkOrder proves that every admission took the head of the line: no user
// admitted while someone placed before them waited both in the last line
// sample surely before the admission step and in the first one after a
// client read it. The step ran at or before the time it was given (its
// hold's start; a hold recorded late, past the record grace, starts at its
// record, after the step), after the user's last sample in line before
// then, and after their first join was sent; Redis may run a request long
// after it was sent (a pause), and in another order than other clients'
// requests.
func (r *Report) checkOrder(h *History, specs map[string]EventSpec, stamps map[userKey][]int64, possible map[userKey]int, admissions map[userKey]map[int64]Admission, firstJoin map[userKey]time.Time) {
	lines := map[string][]Line{}
	for _, l := range h.Lines {
		lines[l.Event] = append(lines[l.Event], l)
	}
	for _, ls := range lines {
		slices.SortFunc(ls, func(a, b Line) int { return a.Sent.Compare(b.Sent) })
	}
	rb := rebuilds(h)
	for k, as := range admissions {
		e, ok := specs[k.event]
		if !ok {
			continue
		}
		ls := lines[k.event]
		for expires, a := range as {
			at := time.UnixMilli(expires - e.HoldMs) // the admission step's clock
			if e.OpensAt > 0 && at.UnixMilli() < e.OpensAt {
				r.EarlyAdmissions = append(r.EarlyAdmissions, fmt.Sprintf("%s/%s admitted at %d, the drop opens at %d", k.event, k.user, at.UnixMilli(), e.OpensAt))
			}
			// before: the last sample answered before the step's time, if
			// the user is in it; else (the step may have run earlier: a hold
			// renewed at its late record) the user's last sample in line
			// before it, or, never sampled in line, the last answered before
			// its first join was sent. after: the first sent after a client
			// read the admission.
			i := sort.Search(len(ls), func(i int) bool { return !ls[i].Got.Before(at) }) - 1
			if i >= 0 {
				if _, in := placeOf(ls[i], k.user); !in {
					u := i - 1
					for u >= 0 && !slices.ContainsFunc(ls[u].Members, func(p Placed) bool { return p.User == k.user }) {
						u--
					}
					if u < 0 {
						joined := firstJoin[k]
						u = sort.Search(len(ls), func(i int) bool { return !ls[i].Got.Before(joined) }) - 1
					}
					i = u
				}
			}
			j := sort.Search(len(ls), func(j int) bool { return ls[j].Sent.After(a.At) })
			if i < 0 || j >= len(ls) {
				continue
			}
			before, after := ls[i], ls[j]
			if overlaps(rb, before.Sent, after.Got) {
				// A rebuild wrote the line between: someone admitted but
				// never told (unrecorded when Redis was emptied) is back at
				// their own place, as if they had waited all along.
				continue
			}
			score, known := placeOf(before, k.user)
			if s := stamps[k]; !known && len(s) > 0 && len(s) == possible[k] && slices.Min(s) >= e.OpensAt {
				// Never sampled in line (the fast track): its earliest stamp,
				// which is at or before its place. Not when a join of its
				// may have landed unanswered: that one's stamp is unknown,
				// and may be earlier.
				score, known = slices.Min(s), true
			}
			if !known {
				continue
			}
			// Waiting in both at the same place: a user admitted and queued
			// again by a later join is at another place after.
			still := map[Placed]bool{}
			for _, p := range after.Members {
				still[p] = true
			}
			for _, p := range before.Members {
				if p.User == k.user || !still[p] {
					continue
				}
				if p.Score < score || p.Score == score && p.User < k.user {
					r.OrderViolations = append(r.OrderViolations, fmt.Sprintf("%s: %s (place %d) admitted at %s while %s (place %d) waited ahead of it",
						k.event, k.user, score, at.Format("15:04:05.000"), p.User, p.Score))
					break
				}
			}
		}
	}
	sort.Strings(r.OrderViolations)
}

func placeOf(l Line, user string) (int64, bool) {
	for _, p := range l.Members {
		if p.User == user {
			return p.Score, true
		}
	}
	return 0, false
}

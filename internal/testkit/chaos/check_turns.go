package chaos

import (
	"fmt"
	"time"
)

// checkTurns proves that nobody loses a turn they were never told of
// (data.md, invariant 4c): a client that never read an admitted frame of
// the event and is told its hold ended was out of touch for a long time,
// long enough to miss a whole hold's notice (a gap in its statuses of half
// a hold or more). A client in touch all along reads the admitted frame as
// soon as the admission is recorded (the notice, or the frame a new socket
// or stream of a holder gets), and an unrecorded hold does not end.
func (r *Report) checkTurns(h *History, specs map[string]EventSpec, admissions map[userKey]map[int64]Admission) {
	gaps := map[userKey][]Gap{}
	for _, g := range h.Gaps {
		k := userKey{g.Event, g.User}
		gaps[k] = append(gaps[k], g)
	}
	// A page put away on purpose is out of touch too: admitted within the
	// grace after it closed (not away yet), its hold may end before it
	// opens again.
	for _, a := range h.Aways {
		k := userKey{a.Event, a.User}
		gaps[k] = append(gaps[k], Gap{Event: a.Event, User: a.User, From: a.From, To: a.To})
	}
	for _, x := range h.Expired {
		k := userKey{x.Event, x.User}
		if len(admissions[k]) > 0 {
			continue // told: it read an admitted frame
		}
		r.Expired++
		long := time.Duration(specs[x.Event].HoldMs) * time.Millisecond / 2
		excused := false
		for _, g := range gaps[k] {
			if g.To.Sub(g.From) >= long && !g.From.After(x.At) {
				excused = true
				break
			}
		}
		if excused {
			r.Excused++
			continue
		}
		r.UntoldTurns = append(r.UntoldTurns, fmt.Sprintf("%s/%s (%s) told at %s that its hold ended, never told of an admission, never out of touch for %v",
			x.Event, x.User, x.Transport, x.At.Format("15:04:05.000"), long))
	}
}

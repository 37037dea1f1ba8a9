package chaos

import (
	"fmt"
	"slices"
	"time"
)

// checkOrigin proves what the origin behind waitq-guard saw:
//   - every request it received carries the identity the guard sets, of an
//     admission a client of the guard's event read (its user and hold's
//     end), within that hold: not before its start, not after its end
//     (beyond the guard's tolerated skew), and not longer than
//     ReleasedGrace after a release of it was answered released (unless a
//     fault on a gateway or Redis kept the guard from hearing of it);
//   - the admitted visitors it sees at once never exceed the capacity
//     possibly in force within the hold window: a visitor is there from its
//     first request to its last, within the part of its hold it surely
//     held (from the hold's start to its end or the first release sent).
func (r *Report) checkOrigin(h *History, cfg Config, admissions map[userKey]map[int64]Admission) {
	for _, g := range h.Guard {
		if r.GuardRequests[g.Kind] == nil {
			r.GuardRequests[g.Kind] = map[Outcome]int{}
		}
		r.GuardRequests[g.Kind][g.Outcome]++
	}
	for _, a := range h.Admin {
		r.AdminChanges[a.Outcome]++
	}
	specs := map[string]EventSpec{}
	for _, e := range cfg.Events {
		specs[e.ID] = e
	}
	// The releases of each admission: the first sent, and the first
	// answered released.
	type released struct{ sent, confirmed time.Time }
	rel := map[admKey]released{}
	for _, x := range h.Releases {
		k := admKey{userKey{x.Event, x.User}, x.ExpiresAt}
		v := rel[k]
		if v.sent.IsZero() || x.At.Before(v.sent) {
			v.sent = x.At
		}
		if x.Released && !x.Answered.IsZero() && (v.confirmed.IsZero() || x.Answered.Before(v.confirmed)) {
			v.confirmed = x.Answered
		}
		rel[k] = v
	}

	type visit struct{ from, to time.Time }
	visits := map[admKey]*visit{}
	r.OriginRequests = len(h.Origin)
	for _, o := range h.Origin {
		e, known := specs[o.Event]
		k := admKey{userKey{o.Event, o.User}, o.Expires}
		a, admitted := admissions[k.userKey][o.Expires]
		at := o.At.Format("15:04:05.000")
		var why string
		switch {
		case o.User == "":
			why = "without the guard's identity"
		case !known:
			why = "for an event the campaign does not know"
		case !admitted:
			why = fmt.Sprintf("as %s with a hold ending %d that no client of %s was admitted with", o.User, o.Expires, o.Event)
		case !a.TokenValid:
			why = fmt.Sprintf("as %s with an admission whose token did not verify", o.User)
		case o.At.UnixMilli() < o.Expires-e.HoldMs-cfg.TokenSkew.Milliseconds()-1000:
			why = fmt.Sprintf("as %s before its hold (ending %d) began", o.User, o.Expires)
		case o.At.UnixMilli() > o.Expires+cfg.TokenSkew.Milliseconds()+1000:
			why = fmt.Sprintf("as %s %v after its hold ended", o.User, o.At.Sub(time.UnixMilli(o.Expires)).Round(time.Millisecond))
		}
		if c := rel[k].confirmed; why == "" && !c.IsZero() && o.At.Sub(c) > cfg.ReleasedGrace &&
			!excused(h.Faults, Gap{From: c, To: o.At}, cfg.FaultGrace) {
			why = fmt.Sprintf("as %s %v after its release was answered", o.User, o.At.Sub(c).Round(time.Millisecond))
		}
		if why != "" {
			r.Unadmitted = append(r.Unadmitted, fmt.Sprintf("%s %s at %s reached the origin %s", o.Event, o.Path, at, why))
			continue
		}
		// The part of the hold surely held.
		from, to := time.UnixMilli(o.Expires-e.HoldMs), time.UnixMilli(o.Expires)
		if s := rel[k].sent; !s.IsZero() && s.Before(to) {
			to = s
		}
		t := o.At
		if t.Before(from) || t.After(to) {
			continue
		}
		if v := visits[k]; v == nil {
			visits[k] = &visit{t, t}
		} else {
			v.from, v.to = minTime(v.from, t), maxTime(v.to, t)
		}
	}

	// The most visitors at once, against the capacity in force.
	type edge struct {
		at    time.Time
		delta int
		event string
	}
	var edges []edge
	for k, v := range visits {
		edges = append(edges, edge{v.from, 1, k.event}, edge{v.to, -1, k.event})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return b.delta - a.delta // at one moment, arrivals before departures: the stricter count
	})
	now := map[string]int{}
	in, window := map[string]settings{}, map[string]time.Duration{}
	for _, e := range cfg.Events {
		in[e.ID], window[e.ID] = settingsOf(e, h.Admin), holdWindow(h, e)
	}
	for _, x := range edges {
		now[x.event] += x.delta
		r.OriginMax = max(r.OriginMax, now[x.event])
		if x.delta < 0 {
			continue
		}
		if c := in[x.event].maxCapacity(x.at.Add(-window[x.event]), x.at); int64(now[x.event]) > c {
			r.OriginOver = append(r.OriginOver, fmt.Sprintf("%s: %d admitted visitors at the origin at %s, capacity in force at most %d",
				x.event, now[x.event], x.at.Format("15:04:05.000"), c))
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

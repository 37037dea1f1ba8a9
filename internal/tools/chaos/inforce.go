package chaos

import (
	"slices"
	"time"
)

// settings tells what configuration of an event may have been in force at
// a moment, from its creation (the EventSpec) and the admin changes sent
// since. A change may take effect from the moment it was sent; one that got
// no answer may take effect at any time after (a paused producer-api runs
// it when thawed). A value stops being possible once a later change of the
// same field, sent after the first was answered, was answered 200 (stored,
// its config record in the log after the first's, so no rebuild brings the
// first back).
type settings struct {
	spec    EventSpec
	changes []AdminChange
}

func settingsOf(spec EventSpec, all []AdminChange) settings {
	s := settings{spec: spec}
	for _, a := range all {
		if a.Event == spec.ID {
			s.changes = append(s.changes, a)
		}
	}
	slices.SortFunc(s.changes, func(a, b AdminChange) int { return a.Sent.Compare(b.Sent) })
	return s
}

// possible returns every value field may have had at some moment of [from,
// to]: the creation's (set at the zero time, answered then) and each
// change's that set it.
func (s settings) possible(from, to time.Time, initial int64, field func(AdminChange) (int64, bool)) []int64 {
	type cand struct {
		v        int64
		answered time.Time // zero: never (may still take effect)
		creation bool
	}
	cands := []cand{{v: initial, creation: true}}
	var setters []AdminChange
	for _, a := range s.changes {
		if _, set := field(a); set {
			setters = append(setters, a)
			if !a.Sent.After(to) {
				v, _ := field(a)
				cands = append(cands, cand{v: v, answered: a.Answered})
			}
		}
	}
	var out []int64
	for _, c := range cands {
		superseded := slices.ContainsFunc(setters, func(q AdminChange) bool {
			return q.OK() && !q.Answered.After(from) && (c.creation || !c.answered.IsZero() && !q.Sent.Before(c.answered))
		})
		if !superseded {
			out = append(out, c.v)
		}
	}
	return out
}

// maxCapacity is the largest capacity possibly in force during [from, to].
func (s settings) maxCapacity(from, to time.Time) int64 {
	return slices.Max(s.possible(from, to, s.spec.Capacity, func(a AdminChange) (int64, bool) { return a.Capacity, a.Capacity >= 0 }))
}

// mayAdmit reports whether the event may have been open (not paused) at
// some moment of [from, to].
func (s settings) mayAdmit(from, to time.Time) bool {
	open := func(a AdminChange) (int64, bool) {
		if a.State == "" {
			return 0, false
		}
		if a.State == "paused" {
			return 0, true
		}
		return 1, true
	}
	initial := int64(1)
	if s.spec.Paused {
		initial = 0
	}
	return slices.Contains(s.possible(from, to, initial, open), 1)
}

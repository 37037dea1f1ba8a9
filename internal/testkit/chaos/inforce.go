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
	capacity, open, rate []candidate
}

// candidate is one value a field was set to: possible from sent on, until
// a later change superseded it (never: the zero time).
type candidate struct {
	v          int64
	sent       time.Time // zero: the creation
	superseded time.Time
}

func settingsOf(spec EventSpec, all []AdminChange) settings {
	var changes []AdminChange
	for _, a := range all {
		if a.Event == spec.ID {
			changes = append(changes, a)
		}
	}
	slices.SortFunc(changes, func(a, b AdminChange) int { return a.Sent.Compare(b.Sent) })
	open := int64(1)
	if spec.Paused {
		open = 0
	}
	return settings{
		capacity: candidates(spec.Capacity, changes, func(a AdminChange) (int64, bool) { return a.Capacity, a.Capacity >= 0 }),
		rate:     candidates(spec.Rate, changes, func(a AdminChange) (int64, bool) { return a.Rate, a.Rate >= 0 }),
		open: candidates(open, changes, func(a AdminChange) (int64, bool) {
			if a.State == "" {
				return 0, false
			}
			if a.State == "paused" {
				return 0, true
			}
			return 1, true
		}),
	}
}

// candidates are the creation's value of a field and each change's that
// set it, each with when a later change superseded it.
func candidates(initial int64, changes []AdminChange, field func(AdminChange) (int64, bool)) []candidate {
	var setters []AdminChange
	for _, a := range changes {
		if _, set := field(a); set {
			setters = append(setters, a)
		}
	}
	// The first 200 answer to a change sent at or after t.
	supersededAfter := func(t time.Time, creation bool) time.Time {
		var first time.Time
		for _, q := range setters {
			if q.OK() && (creation || !q.Sent.Before(t)) && (first.IsZero() || q.Answered.Before(first)) {
				first = q.Answered
			}
		}
		return first
	}
	cs := []candidate{{v: initial, superseded: supersededAfter(time.Time{}, true)}}
	for _, a := range setters {
		v, _ := field(a)
		c := candidate{v: v, sent: a.Sent}
		if !a.Answered.IsZero() {
			c.superseded = supersededAfter(a.Answered, false)
		}
		cs = append(cs, c)
	}
	return cs
}

// possible returns every value of cs that may have been in force at some
// moment of [from, to].
func possible(cs []candidate, from, to time.Time) []int64 {
	var out []int64
	for _, c := range cs {
		if !c.sent.After(to) && (c.superseded.IsZero() || c.superseded.After(from)) {
			out = append(out, c.v)
		}
	}
	return out
}

// maxCapacity is the largest capacity possibly in force during [from, to].
func (s settings) maxCapacity(from, to time.Time) int64 {
	return slices.Max(possible(s.capacity, from, to))
}

// mayAdmit reports whether the event may have been open (not paused) at
// some moment of [from, to].
func (s settings) mayAdmit(from, to time.Time) bool {
	return slices.Contains(possible(s.open, from, to), 1)
}

package chaos

import (
	"fmt"
	"time"
)

// arrivalMargin: a client that reached the shop later than this before its
// window closed may see its report land after the close (one round trip
// to a gateway, and the tick runs every 250 ms): a free is excused.
// arrivalGrace: how long after a fault on Redis or a gateway healed a
// report try may still fail (the gateways reconnecting to Redis).
const (
	arrivalMargin = time.Second
	arrivalGrace  = 2 * time.Second
	// freeSkew: a free seen this much before the window closed is early
	// (the campaign's clocks are one machine's).
	freeSkew = 500 * time.Millisecond
	// releasedKeep: how long after its end a freed admission stays on the
	// released list (queue.ReleasedKeep).
	releasedKeep = 2 * time.Second
)

// admKey names one admission: the user's hold ending at expires (unix ms).
type admKey struct {
	userKey
	expires int64
}

// checkArrivals proves the arrival window's promises (docs/api.md,
// arrivals and no-shows) for the events that have one:
//   - nothing is freed as a no-show after a report of its arrival was
//     answered 200 (marked), whatever the faults;
//   - a client who reached the shop (the origin behind the guard got a
//     request of its admission) is never freed as a no-show: a free is a
//     violation when the client reached the shop at least
//     arrivalMargin before the window closed and no fault on Redis (where
//     the arrival is marked) or on a gateway (the guard's reports go to
//     one, and a report sent to a paused one is not sent again to another)
//     overlapped the time from then to the close, plus arrivalGrace. With
//     such a fault every try (entry.ArriveTries, over 7 s) may fail and the
//     free is by design: reported, not a violation;
//   - nothing is freed as a no-show before its window closed;
//   - each such event frees some no-show's slot before its hold's end (the
//     mechanism works at all), and every no-show's (an admission whose
//     client neither came nor released it: no report of the guard's, no
//     request at the origin) unless a rebuild overlapped the hold: it
//     frees none of the holds it restores (docs/data.md). Redis and the
//     gateways are out for at most 8 s at a time, within the 10 s between
//     the window's close and the hold's end.
//
// A listing of an admission on the released list is a no-show's free
// unless its client sent a release of it before (or within a second after:
// the socket's release is recorded once sent).
func (r *Report) checkArrivals(h *History, cfg Config, admissions map[userKey]map[int64]Admission) {
	for _, a := range h.Arrivals {
		r.ArrivalReports[a.Outcome]++
	}
	reached, released, freed, reported, tried := map[admKey]time.Time{}, map[admKey]time.Time{}, map[admKey]time.Time{}, map[admKey]time.Time{}, map[admKey]time.Time{}
	first := func(m map[admKey]time.Time, k admKey, t time.Time) {
		if was, ok := m[k]; !ok || t.Before(was) {
			m[k] = t
		}
	}
	for _, o := range h.Origin {
		first(reached, admKey{userKey{o.Event, o.User}, o.Expires}, o.At)
	}
	for _, x := range h.Releases {
		first(released, admKey{userKey{x.Event, x.User}, x.ExpiresAt}, x.At)
	}
	for _, f := range h.Freed {
		first(freed, admKey{userKey{f.Event, f.User}, f.ExpiresAt}, f.At)
	}
	for _, a := range h.Arrivals {
		k := admKey{userKey{a.Event, a.User}, a.ExpiresAt}
		first(tried, k, a.Sent)
		if a.Outcome == "200" {
			first(reported, k, a.Sent)
		}
	}
	end := h.end()
	for _, e := range cfg.Events {
		if e.ArrivalMs <= 0 {
			continue
		}
		freedAny, kept := false, 0 // a no-show's slot freed, in time or early (a violation of its own); no-shows kept to the end
		for uk, as := range admissions {
			if uk.event != e.ID {
				continue
			}
			for exp := range as {
				k := admKey{uk, exp}
				closes := time.UnixMilli(exp - e.HoldMs + e.ArrivalMs)
				f, isFreed := freed[k]
				rel, isReleased := released[k]
				o, arrived := reached[k]
				if arrived {
					r.Arrived++
					if !closes.After(end) && (!isReleased || rel.After(closes)) {
						r.ArrivedAtRisk++ // still held when the window closed
					}
				}
				if isReleased && (!isFreed || !rel.After(f.Add(time.Second))) {
					continue // its client gave it back
				}
				_, came := tried[k] // the guard took its token: it may be marked
				came = came || arrived
				switch {
				case !isFreed:
					// A no-show's slot comes back before its end (listed until
					// ReleasedKeep after it), unless a rebuild restored the hold:
					// it frees none of the holds it restores.
					if !came && !time.UnixMilli(exp).Add(releasedKeep).After(end) {
						kept++
						r.keptNoShow(h, k, e.HoldMs)
					}
				case f.Before(closes.Add(-freeSkew)):
					freedAny = true
					r.FreedEarly = append(r.FreedEarly, fmt.Sprintf("%s/%s (hold ending %d): freed at %s, its window closed at %s",
						e.ID, uk.user, exp, clockOf(f), clockOf(closes)))
				case !reported[k].IsZero():
					r.ArrivedFreed = append(r.ArrivedFreed, fmt.Sprintf("%s/%s (hold ending %d): freed at %s after its arrival was answered marked at %s",
						e.ID, uk.user, exp, clockOf(f), clockOf(reported[k])))
				case !arrived:
					freedAny = true
					r.NoShowsFreed++
				default:
					r.arrivedFreed(h, k, o, f, closes)
				}
			}
		}
		if !freedAny {
			r.NoShowsNeverFreed = append(r.NoShowsNeverFreed, fmt.Sprintf("%s: no no-show's slot freed before its hold's end (%d kept to the end)", e.ID, kept))
		}
	}
}

// keptNoShow judges a no-show's admission k kept to its end: excused when
// a rebuild overlapped its hold (holdMs long), else a violation.
func (r *Report) keptNoShow(h *History, k admKey, holdMs int64) {
	from, to := time.UnixMilli(k.expires-holdMs), time.UnixMilli(k.expires)
	for _, f := range h.Faults {
		if f.Kind == Rebuild && !f.Skipped && f.Start.Before(to) && (f.Healed.IsZero() || f.Healed.After(from)) {
			r.NoShowsRestored++
			return
		}
	}
	r.NoShowsKept = append(r.NoShowsKept, fmt.Sprintf("%s/%s (hold ending %d): never came to the shop, never released, held to its end",
		k.event, k.user, k.expires))
}

// arrivedFreed judges the free (at f) of admission k, whose client reached
// the shop at o, its window closing at closes: a violation, or excused.
func (r *Report) arrivedFreed(h *History, k admKey, o, f, closes time.Time) {
	what := fmt.Sprintf("%s/%s (hold ending %d) reached the shop at %s, window closed at %s, freed at %s",
		k.event, k.user, k.expires, clockOf(o), clockOf(closes), clockOf(f))
	var tries []string
	for _, a := range h.Arrivals {
		if a.Event == k.event && a.User == k.user && a.ExpiresAt == k.expires {
			tries = append(tries, fmt.Sprintf("%s %s", clockOf(a.Sent), a.Outcome))
		}
	}
	what += fmt.Sprintf(" (reports: %v)", tries)
	switch {
	case o.After(closes.Add(-arrivalMargin)):
		r.ArrivedFreedExcused = append(r.ArrivedFreedExcused, what+": came at the window's end")
	case excused(h.Faults, Gap{From: o, To: closes}, arrivalGrace):
		r.ArrivedFreedExcused = append(r.ArrivedFreedExcused, what+": a fault on Redis or a gateway")
	default:
		r.ArrivedFreed = append(r.ArrivedFreed, what+": no fault on Redis or a gateway meanwhile")
	}
}

func clockOf(t time.Time) string { return t.Format("15:04:05.000") }

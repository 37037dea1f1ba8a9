package gateway

import (
	"math"

	"github.com/waitq/waitq/internal/queue"
)

// The estimated wait a status frame tells (etaSeconds, etaMaxSeconds).

// pace is what the ETA knows of an event's admissions: the rate it
// assumes (users a second; 0: unknown, or admission stopped), the rate in
// force (users a second; -1: no rate limit, 0: admission stopped) and the
// stay (seconds; 0: unknown).
type pace struct {
	perSecond float64
	limit     float64
	stay      int64
	// admittedTotal and turns are the event's admissions and away turns,
	// for admissionsUntil; capacity its slots (0: unknown), for settled;
	// claimSeconds its claim window (0: unknown or none).
	admittedTotal int64
	capacity      int64
	claimSeconds  int64
	turns         queue.Turns
}

// admissionsUntil is how many admissions the user at position (1-based)
// waits for, their own included, when people are away (queue.Away): of the
// position - 1 people ahead, the share found away at their turn so far
// (called rather than admitted from the head) will be passed over, and of
// the people called now, the share that came back for their turn so far
// (all of them until one turn was claimed or lapsed) will go first, those
// of them back before the user's own turn: the returns spread over the
// claim window, so a wait of w seconds sees min(1, w ÷ the window) of them
// (w the wait without them, at the measured pace; all of them while no
// pace or window is known). Without away turns it is position.
func (p pace) admissionsUntil(position int64) int64 {
	t := p.turns
	if t.CalledTotal == 0 {
		return position
	}
	fromHead := float64(t.CalledTotal)
	if admitted := p.admittedTotal - t.ClaimedTotal; admitted > 0 {
		fromHead += float64(admitted)
	}
	awayShare := float64(t.CalledTotal) / fromHead
	claimShare := 1.0
	if done := t.ClaimedTotal + t.LapsedTotal; done > 0 {
		claimShare = float64(t.ClaimedTotal) / float64(done)
	}
	before := float64(position-1) * (1 - awayShare)
	if p.perSecond > 1e-6 && p.claimSeconds > 0 {
		claimShare *= min(1, (before+1)/p.perSecond/float64(p.claimSeconds))
	}
	return 1 + int64(math.Round(before+float64(t.Called)*claimShare))
}

// etaSeconds estimates the wait of position from the admission rate, or nil
// while no rate is known.
func etaSeconds(position int64, perSecond float64) *int64 {
	if position <= 0 || perSecond <= 1e-6 {
		return nil
	}
	s := int64(math.Ceil(float64(position) / perSecond))
	return &s
}

// settled reports whether the measured pace says how long people really
// keep their slots: after the slots were first filled, half of them again
// (and 50 at least) were admitted (admittedTotal ≥ capacity + max(50,
// capacity ÷ 2)), so the pace holds early releases and no-shows' slots
// freed, not just the first admissions' burst. (Twice the capacity, the
// rule before, left a sale's first slot-turn to the whole-stay figure:
// p90 error 71–145 % over a simulated sale against 33–37 % now.)
func (p pace) settled() bool {
	return p.perSecond > 1e-6 && p.capacity > 0 && p.admittedTotal >= p.capacity+max(50, p.capacity/2)
}

// estimate is the wait of a user at position (1-based; 0: not waiting) as
// a status frame tells it: lo, and hi when the estimate is a range. It
// never promises less than the holds allow: when every slot is taken for
// the user (slotAtMs, queue.Place.SlotAt: when a slot frees for them if
// every holder keeps theirs to the end), nobody is admitted before a slot
// frees, so lo is at least the time until then, and at least the time the
// rate in force needs for position users; a measured pace slower than that
// makes it a range up to position ÷ that pace, at most one stay more (a
// slot is not held longer than a stay: what the pace adds beyond is the
// bursts of admissions a full event has, not a longer wait). Holders who leave early
// (a release) only make it sooner, which the page's own reading of the
// line's movement shows, and once the pace is settled (settled: the slots
// turned over half again) the measured pace is the estimate and the whole-stay
// time its high end. With a slot free for the user the estimate is
// position ÷ the assumed rate, as before. Nothing is promised while
// admission is stopped (an adaptive event without a signal, limit 0).
func estimate(position int64, p pace, slotAtMs, nowMs int64) (lo, hi *int64) {
	if position <= 0 {
		return nil, nil
	}
	position = p.admissionsUntil(position)
	if slotAtMs <= 0 {
		return etaSeconds(position, p.perSecond), nil
	}
	if p.limit == 0 {
		return nil, nil // admission stopped: no slot's end says when it resumes
	}
	wait := max(0, (slotAtMs-nowMs+999)/1000)
	if p.settled() {
		// Once settled, the pace is the estimate: every holder keeping the
		// whole stay is its high end, not its floor (people leave early).
		paced := *etaSeconds(position, p.perSecond)
		if p.limit > 0 {
			paced = max(paced, *etaSeconds(position, p.limit))
		}
		if wait > paced {
			return &paced, &wait
		}
		return &paced, nil
	}
	if p.limit > 0 {
		wait = max(wait, *etaSeconds(position, p.limit))
	}
	if paced := etaSeconds(position, p.perSecond); paced != nil && *paced > wait && p.stay > 0 {
		hi := min(*paced, wait+p.stay)
		return &wait, &hi
	}
	return &wait, nil
}

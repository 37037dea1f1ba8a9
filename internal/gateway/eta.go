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
	// stayMean is the mean stay the admissions since the slots were first
	// filled say (seconds; 0: unknown), and turnover what they have seen
	// (turnoverNone, ...): the estimate before the pace settles. perStay is
	// the rate measured over a stay at least, the settled estimate's.
	stayMean float64
	turnover int
	perStay  float64
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
// keep their slots. When this gateway saw the slots first filled
// (turnover), once a whole stay passed since: the first holders are all
// gone and the pace over a stay holds every kind of stay; until then the
// stays seen so far say it (heldWait). Otherwise, after the slots were first
// filled, half of them again (and 50 at least) were admitted
// (admittedTotal ≥ capacity + max(50, capacity ÷ 2)), so the pace holds
// early releases and no-shows' slots freed, not just the first admissions'
// burst.
func (p pace) settled() bool {
	switch p.turnover {
	case turnoverSeen:
		return p.perStay > 1e-6 || p.perSecond > 1e-6
	case turnoverSeeing:
		return false
	}
	return p.perSecond > 1e-6 && p.capacity > 0 && p.admittedTotal >= p.capacity+max(50, p.capacity/2)
}

// settledRate is the rate a settled estimate assumes: the pace over a stay
// (a full event admits as its holders leave, in waves as long as the
// stays: a shorter window swings with them), else the pace.
func (p pace) settledRate() float64 {
	if p.perStay > 1e-6 {
		return p.perStay
	}
	return p.perSecond
}

// estimate is the wait of a user at position (1-based; 0: not waiting) as
// a status frame tells it: lo, and hi when the estimate is a range
// (docs/api.md, "The estimated wait"). With a slot free for the user it is
// position ÷ the assumed rate. With every slot taken (slotAtMs,
// queue.Place.SlotAt: when a slot frees for them if every holder keeps
// theirs to the end; its wait the holds' time): once the pace is settled,
// position ÷ the pace over a stay; before, once a stay was seen end,
// position × the mean stay seen ÷ capacity (heldWait); either way the holds'
// time is the high end (people leave early) and the rate in force the
// floor. Before any stay is seen end it never promises less than the holds'
// time: nobody is admitted before a slot frees; a measured pace slower than
// that makes it a range up to position ÷ that pace, at most one stay more
// (a slot is not held longer than a stay: what the pace adds beyond is the
// bursts of admissions a full event has, not a longer wait). Nothing is
// promised while admission is stopped (an adaptive event without a signal,
// limit 0).
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
		paced := *etaSeconds(position, p.settledRate())
		if p.limit > 0 {
			paced = max(paced, *etaSeconds(position, p.limit))
		}
		if wait > paced {
			return &paced, &wait
		}
		return &paced, nil
	}
	if held := p.heldWait(position, wait); held < wait {
		// The holds turn over as fast as the stays seen so far say: wait is
		// its high end (everyone keeping the whole stay).
		if p.limit > 0 {
			held = max(held, *etaSeconds(position, p.limit))
		}
		if held < wait {
			return &held, &wait
		}
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

// heldWait is wait, the time until a slot frees if every holder keeps the
// whole stay, shortened by the stays seen so far (stayMean, turnover): the
// position's turn comes when position holds ended, and the slots, all
// taken, free capacity ÷ stayMean a second; wait itself while no stay was
// seen end.
func (p pace) heldWait(position, wait int64) int64 {
	if p.stayMean <= 0 || p.stay <= 0 || p.stayMean >= float64(p.stay) || p.capacity <= 0 {
		return wait
	}
	return min(wait, int64(math.Ceil(float64(position)*p.stayMean/float64(p.capacity))))
}

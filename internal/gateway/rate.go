package gateway

import (
	"slices"
	"sync"

	"github.com/waitq/waitq/internal/queue"
)

// rates estimates each event's admission rate from the admittedTotal counter
// that every status read returns: the admissions per second since the
// newest sample (at most one a second) at least rateWindow old that saw at
// least rateAdmissions fewer admissions, or since the oldest kept (at most
// rateKeep old). A window, not the rate between two reads: a full event
// admits in bursts (a slot frees, the next tick fills it), and the rate
// between two reads a second apart swings between nothing and a burst,
// which made the estimate swing with it; a slow line's window stretches
// until it holds enough admissions to say something (loadgen turns). Safe
// for concurrent use.
type rates struct {
	mu     sync.Mutex
	events map[string]*rate
}

// The measured rate's window: at least rateWindow and rateAdmissions
// admissions, at most rateKeep (ms).
const (
	rateWindow     = 60_000
	rateAdmissions = 50
	rateKeep       = 10 * 60_000
)

// rate is one event's samples of admittedTotal, oldest first.
type rate struct {
	samples []rateSample
	turn    turnover
}

type rateSample struct{ total, atMs int64 }

func newRates() *rates { return &rates{events: map[string]*rate{}} }

// record keeps admittedTotal of event at nowMs (at most one sample a
// second, none older than rateKeep but the last two) and returns the
// event's samples. r.mu is held.
func (r *rates) record(event string, admittedTotal, nowMs int64) *rate {
	e, ok := r.events[event]
	if !ok {
		e = &rate{}
		r.events[event] = e
	}
	if n := len(e.samples); n == 0 || nowMs-e.samples[n-1].atMs >= 1000 {
		e.samples = append(e.samples, rateSample{admittedTotal, nowMs})
	}
	for len(e.samples) > 2 && e.samples[0].atMs < nowMs-rateKeep {
		e.samples = e.samples[1:]
	}
	return e
}

// since is the admissions per second since the newest sample at least
// window (ms) old that saw at least rateAdmissions fewer admissions, or
// since the oldest kept; 0 until a second has passed since the first.
func (e *rate) since(window, admittedTotal, nowMs int64) float64 {
	base := e.samples[0]
	for i := len(e.samples) - 1; i >= 0; i-- {
		if s := e.samples[i]; nowMs-s.atMs >= window && admittedTotal-s.total >= rateAdmissions {
			base = s
			break
		}
	}
	dt := float64(nowMs-base.atMs) / 1000
	if dt < 1 {
		return 0
	}
	return float64(max(admittedTotal-base.total, 0)) / dt
}

// measures are what rates measured of an event at one read.
type measures struct {
	perSecond float64 // over rateWindow
	perStay   float64 // over a stay at least (at most rateKeep): see pace.perStay
	stayMean  float64 // the turnover's, pace.stayMean
	turnover  int     // pace.turnover
}

// measure records b of event (configured as e, nil: unknown) at nowMs and
// returns what it measures.
func (r *rates) measure(e *queue.Event, event string, b queue.StatusBatch, nowMs int64) measures {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.record(event, b.AdmittedTotal, nowMs)
	m := measures{perSecond: ev.since(rateWindow, b.AdmittedTotal, nowMs)}
	if e == nil || e.StaySeconds <= 0 {
		return m
	}
	stay := int64(e.StaySeconds)
	m.perStay = ev.since(min(max(rateWindow, stay*1000), rateKeep), b.AdmittedTotal, nowMs)
	full := slices.ContainsFunc(b.SlotAt, func(at int64) bool { return at > 0 })
	if !ev.turn.noteFill(full, int64(e.Capacity), b.AdmittedTotal, nowMs) {
		return m
	}
	ev.turn.observe(b.AdmittedTotal, nowMs, stay)
	m.stayMean, m.turnover = ev.turn.meanStay(stay), turnoverSeeing
	if ev.turn.seenAll(stay) {
		m.turnover = turnoverSeen
	}
	return m
}

// pace is the pace the ETA assumes for event, its admissions measured by r. The rate is
// the measured one (from admittedTotal), never above the rate in force (an
// adaptive event's effective rate, else its admitPerMinute), and that rate
// itself while nothing has been measured yet; 0 (no ETA) while an adaptive
// event admits nobody. e is the event's configuration, nil when unknown.
func (r *rates) pace(e *queue.Event, event string, b queue.StatusBatch, nowMs int64) pace {
	m := r.measure(e, event, b, nowMs)
	p := admissionRate(e, b, m.perSecond)
	if e != nil {
		p.stay, p.capacity, p.claimSeconds = int64(e.StaySeconds), int64(e.Capacity), int64(e.Away.ClaimSeconds)
	}
	p.stayMean, p.turnover = m.stayMean, m.turnover
	if p.perStay = m.perStay; p.limit > 0 {
		p.perStay = min(p.perStay, p.limit)
	}
	p.admittedTotal, p.turns = b.AdmittedTotal, b.Turns
	return p
}

// admissionRate is pace's rates, measured the rate measured.
func admissionRate(e *queue.Event, b queue.StatusBatch, measured float64) pace {
	limit := int64(-1)
	switch {
	case b.AdmitPerMinute >= 0:
		limit = b.AdmitPerMinute
	case e != nil && e.AdmitPerMinute > 0:
		limit = int64(e.AdmitPerMinute)
	}
	switch limit {
	case -1:
		return pace{perSecond: measured, limit: -1}
	case 0:
		return pace{}
	}
	ceiling := float64(limit) / 60
	if measured <= 0 || measured > ceiling {
		return pace{perSecond: ceiling, limit: ceiling}
	}
	return pace{perSecond: measured, limit: ceiling}
}

// Teller makes the status frames a gateway tells, its estimate's rates
// measured from the reads it is given: the one door through which a
// measurement (loadgen turns) reads what people are told (state,
// position, estimate) as ws-gateway's sockets and polls are. It is safe
// for concurrent use.
type Teller struct{ rates *rates }

// NewTeller returns a Teller with nothing measured yet.
func NewTeller() *Teller { return &Teller{rates: newRates()} }

// Frames returns the status frames of users (b's places, read at nowMs)
// of event, configured as e, as a poll of each would answer them.
func (t *Teller) Frames(e *queue.Event, event string, users []string, b queue.StatusBatch, nowMs int64) []StatusFrame {
	pc := t.rates.pace(e, event, b, nowMs)
	out := make([]StatusFrame, len(users))
	for i, u := range users {
		out[i] = statusFrame(e, event, u, b.Places[i], slotOf(b, i), b.Total, pc, nowMs, socketView{}, 0)
	}
	return out
}

package gateway

import "sync"

// rates estimates each event's admission rate from the admittedTotal counter
// that every status read returns: an exponentially weighted average of the
// admissions per second between reads at least a second apart. Safe for
// concurrent use.
type rates struct {
	mu     sync.Mutex
	events map[string]*rate
}

type rate struct {
	total, atMs int64
	perSecond   float64
	known       bool
}

func newRates() *rates { return &rates{events: map[string]*rate{}} }

// observe records admittedTotal of event at nowMs and returns the rate.
func (r *rates) observe(event string, admittedTotal, nowMs int64) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.events[event]
	if !ok {
		r.events[event] = &rate{total: admittedTotal, atMs: nowMs}
		return 0
	}
	dt := float64(nowMs-e.atMs) / 1000
	if dt < 1 {
		return e.perSecond
	}
	inst := float64(max(admittedTotal-e.total, 0)) / dt
	if e.known {
		e.perSecond = 0.7*e.perSecond + 0.3*inst
	} else if inst > 0 {
		e.perSecond, e.known = inst, true
	}
	e.total, e.atMs = admittedTotal, nowMs
	return e.perSecond
}

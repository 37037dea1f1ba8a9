package gateway

// Tracker is the tracker, for the external tests.
type Tracker = tracker

// NewTracker is newTracker, for the external tests.
var NewTracker = newTracker

// SetRelearn sets how many users known before one Status call reads again.
func (t *tracker) SetRelearn(n int) { t.relearn = n }

// ID is the gateway id the tracker holds presences under.
func (t *tracker) ID() uint64 { return t.id }

// EventKeyed counts what the server keeps per event id: the rate
// estimates, the tracker's lines and its presences to let go.
func (s *Server) EventKeyed() int {
	s.rates.mu.Lock()
	n := len(s.rates.events)
	s.rates.mu.Unlock()
	s.tracker.mu.Lock()
	n += len(s.tracker.lines)
	s.tracker.mu.Unlock()
	s.tracker.detachMu.Lock()
	n += len(s.tracker.detach)
	s.tracker.detachMu.Unlock()
	return n
}

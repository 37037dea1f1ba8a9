package queue

// The slot monitor's tick (GatewayStore.Tick): what it is asked and what
// it did to each event.

// TickRequest is one slot-monitor tick over several events.
type TickRequest struct {
	EventIDs []string
	NowMs    int64 // the tick's time (unix ms): holds end before it, new ones run from it
	// AdmitBatch is the most users one event admits in the tick.
	AdmitBatch int
	// PresenceCutoffMs removes waiting users last seen before it (unix ms):
	// those gone past the disconnect grace.
	PresenceCutoffMs int64
	// SilentCutoffMs lets go of the presences held by gateways that have
	// not read the event's line since before it (unix ms), as if their
	// users' sockets closed then: they are removed a grace later unless
	// another socket of theirs takes the presence again (0: the
	// PresenceCutoffMs).
	SilentCutoffMs int64
	// SweepLimit is the most users one event loses to the sweep in the tick
	// (0: no sweep).
	SweepLimit int
}

// TickResult is what one slot-monitor tick did to one event.
type TickResult struct {
	EventID   string
	Admitted  []string // moved from the head of the line into slots, in order
	ExpiresAt int64    // end of the admitted users' hold (unix ms)
	Expired   int64    // holders whose stay had ended
	Holders   int64    // users holding a slot after the tick
	Waiting   int64    // users waiting after the tick
	Swept     []string // waiting users removed after the disconnect grace (or the away keep time)
	Called    []string // away when their turn came: called, their turn waiting (queue.Away)
	Lapsed    []string // called, not back within the claim window
	Unknown   bool     // the event has no configuration
	// Recovered counts admissions a crashed admitter left unrecorded that
	// this tick recorded (their users are told through the admissions
	// channel).
	Recovered int
	// HoldsExpired counts the item holds that ended unconfirmed with the
	// dropped holders' slots (deleted in the tick's step).
	HoldsExpired int
	// NoShows counts the holders whose slots the tick freed: not arrived
	// within the event's arrival window (arrival.go).
	NoShows int
}

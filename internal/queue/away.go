package queue

// Away: a waiting person whose page is closed (a phone asleep, a tab shut)
// keeps the place. Once their page has been gone for the disconnect grace
// they count as away; the line still moves. When their turn comes while
// they are away they are called: they leave the line and take no slot, and
// for the claim window their turn waits for them. Back within it (any page
// of theirs reads their status: a socket, a stream or a poll), they are
// admitted ahead of the line, within capacity, rate and pause as every
// admission; not back, the turn lapses (no_show) and they may join again at
// the back. A person away for longer than the keep time loses the place
// (a sweep). The admission step does it (admission.lua); docs/data.md,
// "Away, called, lapsed".

// Away is an event's keeping of places while their people are away.
type Away struct {
	// KeepSeconds is how long a waiting person whose page is closed keeps
	// the place: past it, the place is removed (a sweep record).
	KeepSeconds int `json:"keepSeconds"`
	// ClaimSeconds is the claim window: how long a turn that came while
	// its person was away waits for them.
	ClaimSeconds int `json:"claimSeconds"`
	// NotifyAhead, when positive, sends the early mail of a person who
	// left an address once at most this many people are ahead of them
	// (notify.go); 0: only the mail of the call.
	NotifyAhead int `json:"notifyAhead,omitempty"`
}

// Limits and defaults of Away.
const (
	// DefaultAwayKeepSeconds: 30 minutes. A phone answers a call, a
	// commute goes through a tunnel, a laptop lid shuts for a meeting:
	// the common ways a page stops are minutes long, not seconds (iOS
	// suspends a background tab within seconds), while a place kept for
	// hours after its person gave up makes the estimate of everyone
	// behind it worse. Half an hour covers the first and lets the line
	// forget the second in about the time the first people of a sale
	// take to be served.
	DefaultAwayKeepSeconds = 30 * 60
	// DefaultAwayClaimSeconds: 10 minutes, long enough to see a mail or a
	// notification and open it, short enough that a slot waits for few.
	DefaultAwayClaimSeconds = 10 * 60
	MinAwaySeconds          = 60
	MaxAwayKeepSeconds      = 12 * 3600
	MaxAwayClaimSeconds     = 2 * 3600
	// MaxNotifyAhead bounds NotifyAhead: the slot monitor reads that many
	// of the line's head every tick for the addresses among them.
	MaxNotifyAhead = 10000
)

// DefaultAway is the keeping an event created without one gets.
func DefaultAway() Away {
	return Away{KeepSeconds: DefaultAwayKeepSeconds, ClaimSeconds: DefaultAwayClaimSeconds}
}

// On reports whether a keeps places while away (the zero Away does not).
func (a Away) On() bool { return a != Away{} }

// Validate reports the first invalid field of a as a CodeInvalidConfig
// error.
func (a *Away) Validate() error {
	switch {
	case a.KeepSeconds < MinAwaySeconds || a.KeepSeconds > MaxAwayKeepSeconds:
		return Errorf(CodeInvalidConfig, "away.keepSeconds must be between %d and %d", MinAwaySeconds, MaxAwayKeepSeconds)
	case a.ClaimSeconds < MinAwaySeconds || a.ClaimSeconds > MaxAwayClaimSeconds:
		return Errorf(CodeInvalidConfig, "away.claimSeconds must be between %d and %d", MinAwaySeconds, MaxAwayClaimSeconds)
	case a.NotifyAhead < 0 || a.NotifyAhead > MaxNotifyAhead:
		return Errorf(CodeInvalidConfig, "away.notifyAhead must be between 0 (off) and %d", MaxNotifyAhead)
	}
	return nil
}

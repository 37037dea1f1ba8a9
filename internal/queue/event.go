package queue

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/waitq/waitq/pkg/draw"
)

// EventState says whether an event accepts joins and admits.
type EventState string

// Event states.
const (
	// StateOpen accepts joins and admits.
	StateOpen EventState = "open"
	// StatePaused accepts joins, which keep their places, and admits
	// nobody until the event is open again (the shop is in trouble).
	StatePaused EventState = "paused"
	// StateClosed takes no new joins; the line already there is admitted.
	StateClosed EventState = "closed"
)

// Limits on an event's configuration.
const (
	MaxCapacity    = 1_000_000
	MaxStaySeconds = 24 * 3600
	MaxPartitions  = 256
	// MaxAdmitPerMinute bounds an event's admission rate.
	MaxAdmitPerMinute = 1_000_000
	// MaxPrequeueSeconds bounds how long before its opening a drop takes
	// joins.
	MaxPrequeueSeconds = 7 * 24 * 3600
	// DefaultAdmitBatch is the most users one event admits in one step:
	// a slot-monitor tick, a join batch or a release.
	DefaultAdmitBatch = 100
)

// Event is an event's configuration: how many users may hold a slot at once,
// for how long, how many may be let in a minute, whether it is open, and how
// many partitions its topic has.
type Event struct {
	ID          string `json:"eventId"`
	Capacity    int    `json:"capacity"`
	StaySeconds int    `json:"staySeconds"`
	// AdmitPerMinute is the most users admitted per minute, smoothed by a
	// token bucket (0: no rate limit; capacity alone holds).
	AdmitPerMinute int        `json:"admitPerMinute"`
	State          EventState `json:"state"`
	Partitions     int        `json:"partitions"`
	// TargetURL is where admitted users are sent, with their entry token
	// (absolute http(s) URL; "": the client is told nothing).
	TargetURL string `json:"targetUrl,omitempty"`
	// Adaptive, when set, lets the shop's health set the admission rate,
	// with AdmitPerMinute as its ceiling (nil: AdmitPerMinute is the rate).
	Adaptive *Adaptive `json:"adaptive,omitempty"`
	// ReportToken is the event's own bearer token for health reports
	// (POST /v1/admin/events/{id}/health), so a guard or a shop can report
	// without the admin token. Shown to admins only.
	ReportToken string `json:"reportToken,omitempty"`
	// ShopToken is the event's shop credential: the bearer token of the
	// seat holds' sales (confirm, and the undo of a sale), which the shop
	// holds and its buyers never see. Shown to admins only.
	ShopToken string `json:"shopToken,omitempty"`
	// MaxItemsPerUser is how many items (seats) one user may hold or buy
	// (0: DefaultMaxItemsPerUser).
	MaxItemsPerUser int `json:"maxItemsPerUser,omitempty"`
	// Challenge, when set and not off, asks each join for the solution of a
	// proof-of-work challenge (nil: none).
	Challenge *ChallengePolicy `json:"challenge,omitempty"`
	// JoinToken lists the keys of the shop's join tokens and whether one is
	// required (invite only). Its secrets are shown to admins only.
	JoinToken *JoinTokenPolicy `json:"joinToken,omitempty"`
	// Page is the branding of the event's waiting room page (nil: the
	// plain page); public, in GET /v1/events/{id}.
	Page *Page `json:"page,omitempty"`
	// Away keeps the places of people whose page is closed, and calls them
	// when their turn comes (the zero Away: off, a place is removed after
	// the disconnect grace). An event created through the admin API gets
	// DefaultAway.
	Away Away `json:"away,omitzero"`
	// ArrivalSeconds, when not 0, is how long an admitted person has to
	// arrive at the shop (their first request with the entry token,
	// reported by the guard, the middleware or forward-auth) before their
	// slot is freed as a no-show's (0: off, the default: a shop whose
	// integration reports no arrivals keeps its buyers; arrival.go).
	ArrivalSeconds int `json:"arrivalSeconds,omitempty"`
	Schedule
	// Seed is the secret of the event's draw, drawn when it was first
	// scheduled (nil: never scheduled). It is never serialized: DrawStatus
	// reveals it at the opening.
	Seed *draw.Seed `json:"-"`
	// DrawSource, when set, makes the drop's draw a chain draw: the public
	// random source whose value the operator supplies after the opening
	// (drawchain.go; nil: a classic commit-reveal draw).
	DrawSource *draw.PublicSource `json:"drawSource,omitempty"`
	// SaltKey is a chain draw's secret salt key (draw.Salt), drawn with the
	// source and never revealed; nil for a classic draw.
	SaltKey *[draw.SaltKeySize]byte `json:"-"`
	// Chain is a chain draw's state as stored (frozen, drawn); never
	// serialized: DrawStatus tells it.
	Chain DrawChainState `json:"-"`
}

// Schedule is a ticket drop's timetable; the zero Schedule is an event
// open at once, for good.
type Schedule struct {
	// OpensAt is the opening (unix ms; 0: not scheduled): the pre-queue's
	// random draw takes effect and admission starts.
	OpensAt int64 `json:"opensAt,omitempty"`
	// PrequeueSeconds is how long before OpensAt joins are taken; a join
	// before that is refused with event_not_open.
	PrequeueSeconds int `json:"prequeueSeconds,omitempty"`
	// ClosesAt is when joins stop (unix ms; 0: never); the line already
	// there is still admitted.
	ClosesAt int64 `json:"closesAt,omitempty"`
}

// PrequeueOpensAt is when the pre-queue starts taking joins (unix ms).
func (s Schedule) PrequeueOpensAt() int64 { return s.OpensAt - int64(s.PrequeueSeconds)*1000 }

// Locked reports whether the opening and the pre-queue can no longer move at
// nowMs: once the pre-queue took joins, moving them would change who is in
// the draw.
func (s Schedule) Locked(nowMs int64) bool { return s.OpensAt > 0 && nowMs >= s.PrequeueOpensAt() }

// Phase is where an event stands in time, as clients are told.
type Phase string

// Event phases.
const (
	// PhaseScheduled: a drop whose pre-queue has not started; joins are
	// refused with event_not_open.
	PhaseScheduled Phase = "scheduled"
	// PhasePrequeue: joins gather for the draw; nobody has a place or is
	// admitted until the opening.
	PhasePrequeue Phase = "prequeue"
	// PhaseOpen: joins take places, the line is admitted.
	PhaseOpen Phase = "open"
	// PhasePaused: joins take places, nobody is admitted.
	PhasePaused Phase = "paused"
	// PhaseClosed: no new joins; the line is still admitted.
	PhaseClosed Phase = "closed"
)

// Phase returns e's phase at nowMs.
func (e *Event) Phase(nowMs int64) Phase {
	switch {
	case e.State == StateClosed || (e.ClosesAt > 0 && nowMs >= e.ClosesAt):
		return PhaseClosed
	case e.OpensAt > 0 && nowMs < e.PrequeueOpensAt():
		return PhaseScheduled
	case e.OpensAt > 0 && nowMs < e.OpensAt:
		return PhasePrequeue
	case e.State == StatePaused:
		return PhasePaused
	}
	return PhaseOpen
}

// CheckJoin reports whether a join stamped at nowMs is taken: an
// event_not_open error (with OpensAt and a RetryAfter to the pre-queue's
// start) before the pre-queue, event_closed after the close.
func (e *Event) CheckJoin(nowMs int64) error {
	switch e.Phase(nowMs) {
	case PhaseScheduled:
		start := e.PrequeueOpensAt()
		err := Errorf(CodeEventNotOpen, "event %s takes joins from %s", e.ID, time.UnixMilli(start).UTC().Format(time.RFC3339))
		err.OpensAt = e.OpensAt
		err.RetryAfter = time.Duration(start-nowMs) * time.Millisecond
		return err
	case PhaseClosed:
		return Errorf(CodeEventClosed, "event %s is not accepting joins", e.ID)
	}
	return nil
}

// Validate reports the first invalid field of e as a CodeInvalidConfig error.
func (e *Event) Validate() error {
	switch {
	case !ValidEventID(e.ID):
		return CheckEventID(e.ID)
	case e.Capacity < 1 || e.Capacity > MaxCapacity:
		return Errorf(CodeInvalidConfig, "capacity must be between 1 and %d", MaxCapacity)
	case e.StaySeconds < 1 || e.StaySeconds > MaxStaySeconds:
		return Errorf(CodeInvalidConfig, "staySeconds must be between 1 and %d", MaxStaySeconds)
	case e.State != StateOpen && e.State != StatePaused && e.State != StateClosed:
		return Errorf(CodeInvalidConfig, "state must be %q, %q or %q", StateOpen, StatePaused, StateClosed)
	case e.Partitions < 1 || e.Partitions > MaxPartitions:
		return Errorf(CodeInvalidConfig, "partitions must be between 1 and %d", MaxPartitions)
	case e.AdmitPerMinute < 0 || e.AdmitPerMinute > MaxAdmitPerMinute:
		return Errorf(CodeInvalidConfig, "admitPerMinute must be between 0 (no rate limit) and %d", MaxAdmitPerMinute)
	case e.TargetURL != "" && CheckTargetURL(e.TargetURL) != nil:
		return CheckTargetURL(e.TargetURL)
	case e.Adaptive != nil && e.Adaptive.Validate(e.AdmitPerMinute) != nil:
		return e.Adaptive.Validate(e.AdmitPerMinute)
	case e.ReportToken != "" && CheckReportToken(e.ReportToken) != nil:
		return CheckReportToken(e.ReportToken)
	case e.ShopToken != "" && CheckShopToken(e.ShopToken) != nil:
		return CheckShopToken(e.ShopToken)
	case e.MaxItemsPerUser < 0 || e.MaxItemsPerUser > MaxItemsPerUser:
		return Errorf(CodeInvalidConfig, "maxItemsPerUser must be between 1 and %d, or 0 for %d", MaxItemsPerUser, DefaultMaxItemsPerUser)
	case e.Challenge != nil && e.Challenge.Validate() != nil:
		return e.Challenge.Validate()
	case e.JoinToken != nil && e.JoinToken.Validate() != nil:
		return e.JoinToken.Validate()
	case e.Page.Validate() != nil:
		return e.Page.Validate()
	case e.Away.On() && e.Away.Validate() != nil:
		return e.Away.Validate()
	case e.checkArrival() != nil:
		return e.checkArrival()
	case e.checkDrawSource() != nil:
		return e.checkDrawSource()
	case e.OpensAt < 0:
		return Errorf(CodeInvalidConfig, "opensAt must be a time in unix milliseconds, or 0 for no schedule")
	case e.PrequeueSeconds < 0 || e.PrequeueSeconds > MaxPrequeueSeconds:
		return Errorf(CodeInvalidConfig, "prequeueSeconds must be between 0 and %d", MaxPrequeueSeconds)
	case e.PrequeueSeconds > 0 && e.OpensAt == 0:
		return Errorf(CodeInvalidConfig, "prequeueSeconds needs an opensAt")
	case e.ClosesAt < 0 || (e.ClosesAt > 0 && e.ClosesAt <= e.OpensAt):
		return Errorf(CodeInvalidConfig, "closesAt must be after opensAt, or 0 for never")
	}
	return nil
}

// MaxTargetURLLength bounds an event's targetUrl.
const MaxTargetURLLength = 1024

// CheckTargetURL reports whether u can be an event's targetUrl: an absolute
// http or https URL with a host and no user information, as an
// invalid_config error.
func CheckTargetURL(u string) error {
	return checkURL("targetUrl", u, MaxTargetURLLength, "http", "https")
}

// String returns a short description of e for logs.
func (e Event) String() string {
	s := fmt.Sprintf("event %s (capacity %d, hold %ds, %d a minute, %s, %d partitions", e.ID, e.Capacity, e.StaySeconds, e.AdmitPerMinute, e.State, e.Partitions)
	if e.OpensAt > 0 {
		s += fmt.Sprintf(", opens %s after a %ds pre-queue", time.UnixMilli(e.OpensAt).UTC().Format(time.RFC3339), e.PrequeueSeconds)
	}
	if e.Adaptive != nil {
		s += fmt.Sprintf(", adaptive to p95 %d ms", e.Adaptive.TargetLatencyMs)
	}
	if e.ClosesAt > 0 {
		s += ", closes " + time.UnixMilli(e.ClosesAt).UTC().Format(time.RFC3339)
	}
	return s + ")"
}

// MarshalJSON writes s with Holders also as active, the field's older
// name, kept for the clients that read it (docs/api.md).
func (s EventStatus) MarshalJSON() ([]byte, error) {
	type plain EventStatus // without this method
	return json.Marshal(struct {
		plain
		Active int64 `json:"active"`
	}{plain(s), s.Holders})
}

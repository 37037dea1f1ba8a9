package queue

import (
	"context"
	"fmt"
	"time"
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

// AcceptsJoins reports whether a join is accepted in state s.
func (s EventState) AcceptsJoins() bool { return s == StateOpen || s == StatePaused }

// Limits on an event's configuration.
const (
	MaxCapacity    = 1_000_000
	MaxHoldSeconds = 24 * 3600
	MaxPartitions  = 256
	// MaxAdmitPerMinute bounds an event's admission rate.
	MaxAdmitPerMinute = 1_000_000
	// DefaultAdmitBatch is the most users one event admits in one step:
	// a slot-monitor round, a join batch or a release.
	DefaultAdmitBatch = 100
)

// Event is an event's configuration: how many users may hold a slot at once,
// for how long, how many may be let in a minute, whether it is open, and how
// many partitions its topic has.
type Event struct {
	ID          string `json:"eventId"`
	Capacity    int    `json:"capacity"`
	HoldSeconds int    `json:"holdSeconds"`
	// AdmitPerMinute is the most users admitted per minute, smoothed by a
	// token bucket (0: no rate limit; capacity alone holds).
	AdmitPerMinute int        `json:"admitPerMinute"`
	State          EventState `json:"state"`
	Partitions     int        `json:"partitions"`
}

// Validate reports the first invalid field of e as a CodeInvalidConfig error.
func (e *Event) Validate() error {
	switch {
	case !ValidEventID(e.ID):
		return CheckEventID(e.ID)
	case e.Capacity < 1 || e.Capacity > MaxCapacity:
		return Errorf(CodeInvalidConfig, "capacity must be between 1 and %d", MaxCapacity)
	case e.HoldSeconds < 1 || e.HoldSeconds > MaxHoldSeconds:
		return Errorf(CodeInvalidConfig, "holdSeconds must be between 1 and %d", MaxHoldSeconds)
	case e.State != StateOpen && e.State != StatePaused && e.State != StateClosed:
		return Errorf(CodeInvalidConfig, "state must be %q, %q or %q", StateOpen, StatePaused, StateClosed)
	case e.Partitions < 1 || e.Partitions > MaxPartitions:
		return Errorf(CodeInvalidConfig, "partitions must be between 1 and %d", MaxPartitions)
	case e.AdmitPerMinute < 0 || e.AdmitPerMinute > MaxAdmitPerMinute:
		return Errorf(CodeInvalidConfig, "admitPerMinute must be between 0 (no rate limit) and %d", MaxAdmitPerMinute)
	}
	return nil
}

// EventStatus is an event's configuration with the live sizes of its line.
type EventStatus struct {
	Event
	Waiting       int64 `json:"waiting"`
	Active        int64 `json:"active"`
	AdmittedTotal int64 `json:"admittedTotal"`
}

// EventLookup finds an event's configuration.
type EventLookup interface {
	// Event returns the configuration of id, or ErrEventNotFound.
	Event(ctx context.Context, id string) (Event, error)
}

// EventStore keeps event configurations and reports their live state.
type EventStore interface {
	// PutEvent creates or replaces e's configuration and reports whether it
	// was created.
	PutEvent(ctx context.Context, e Event) (created bool, err error)
	EventLookup
	// EventStatus returns id's configuration and live sizes, or ErrEventNotFound.
	EventStatus(ctx context.Context, id string, nowMs int64) (EventStatus, error)
	// EventIDs lists the registered events.
	EventIDs(ctx context.Context) ([]string, error)
	// DeleteEvent removes id and its line; it fails with CodeSlotsInUse while
	// anyone holds a slot, and with ErrEventNotFound for an unknown id.
	DeleteEvent(ctx context.Context, id string, nowMs int64) error
	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
}

// Topics manages the per-event Kafka topics.
type Topics interface {
	// EnsureTopic creates the event's topic with the given partitions, or
	// does nothing if it exists.
	EnsureTopic(ctx context.Context, eventID string, partitions int) error
	// DeleteTopic removes the event's topic; a missing topic is no error.
	DeleteTopic(ctx context.Context, eventID string) error
}

// DefaultPublishTimeout is how long a publish waits for the broker's
// acknowledgement before it fails: a join is then answered 503
// broker_unavailable.
const DefaultPublishTimeout = 3 * time.Second

// Publisher publishes messages to the event's topic and returns only after the
// broker acknowledged them from all in-sync replicas.
type Publisher interface {
	Publish(ctx context.Context, m Message) error
	// Ping reports whether the broker is reachable.
	Ping(ctx context.Context) error
}

// String returns a short description of e for logs.
func (e Event) String() string {
	return fmt.Sprintf("event %s (capacity %d, hold %ds, %d a minute, %s, %d partitions)", e.ID, e.Capacity, e.HoldSeconds, e.AdmitPerMinute, e.State, e.Partitions)
}

// Place is where one user stands in an event.
type Place struct {
	Rank      int64 // 0-based rank in the waiting line, -1 when not waiting
	HoldUntil int64 // end of the user's hold (unix ms), -1 when not holding
}

// StatusBatch is the state of one event for a set of users, read at once.
type StatusBatch struct {
	Total         int64   // users waiting
	AdmittedTotal int64   // users ever admitted
	Places        []Place // one per user asked about, in order
}

// Admission is one admission step's news, published to every gateway: the
// users let in, in line order, and the end of their hold.
type Admission struct {
	EventID   string   `json:"eventId"`
	ExpiresAt int64    `json:"expiresAt"` // unix ms
	Users     []string `json:"users"`
}

// TickRequest is one slot-monitor round over several events.
type TickRequest struct {
	EventIDs []string
	NowMs    int64 // the round's time (unix ms): holds end before it, new ones run from it
	// AdmitBatch is the most users one event admits in the round.
	AdmitBatch int
	// PresenceCutoffMs removes waiting users last seen before it (unix ms):
	// those gone past the disconnect grace.
	PresenceCutoffMs int64
	// SweepLimit is the most users one event loses to the sweep in the round.
	SweepLimit int
}

// TickResult is what one slot-monitor tick did to one event.
type TickResult struct {
	EventID   string
	Admitted  []string // moved from the head of the line into slots, in order
	ExpiresAt int64    // end of the admitted users' hold (unix ms)
	Dropped   int64    // holders whose hold had ended
	Holders   int64    // users holding a slot after the tick
	Waiting   int64    // users waiting after the tick
	Swept     []string // waiting users removed after the disconnect grace
	Unknown   bool     // the event has no configuration
}

package queue

import "github.com/waitq/waitq/pkg/draw"

// A drop's draw is classic (commit–reveal: the seed alone orders the
// pre-queue's user ids) or, when its schedule names a public source, a
// chain draw (docs/api.md, "Ticket drops"): the pre-queue's salted entries
// frozen under a Merkle root at the opening, the seed mixed with the
// public value the operator supplies after it, and a receipt for every
// visitor. Package draw holds the rule; this file the event's side of it.

// DrawKind names a draw's kind as clients are told.
type DrawKind string

// Draw kinds.
const (
	DrawClassic DrawKind = "classic"
	DrawChain   DrawKind = "chain"
)

// DrawFreezeLagMs is how long after the opening a pre-queue join (stamped
// before it) may still reach the line and be among a chain draw's entries;
// one ingested later is placed after the drawn ones, at its stamp.
const DrawFreezeLagMs = 5000

// DrawChainState is a chain draw's state as stored.
type DrawChainState struct {
	// EntryRoot (hex) and EntryCount are the frozen entries' Merkle root
	// and count ("" before the freeze).
	EntryRoot  string
	EntryCount int
	// PublicValue is the value supplied (hex; "" none yet, or missed).
	PublicValue string
	// DrawnAt is when the draw was made (unix ms; 0: not yet).
	DrawnAt int64
}

// ChainDraw reports whether e's draw is a chain draw.
func (e *Event) ChainDraw() bool { return e.OpensAt > 0 && e.DrawSource != nil }

// DrawFreezeAt is when a chain draw's entries freeze (unix ms).
func (e *Event) DrawFreezeAt() int64 { return e.OpensAt + DrawFreezeLagMs }

// DrawDeadline is when a chain draw without its public value is made with
// none (unix ms).
func (e *Event) DrawDeadline() int64 {
	return e.OpensAt + int64(e.DrawSource.Deadline())*1000
}

// checkDrawSource checks a chain draw's source.
func (e *Event) checkDrawSource() error {
	if e.DrawSource == nil {
		return nil
	}
	if e.OpensAt == 0 {
		return Errorf(CodeInvalidConfig, "draw.publicSource needs an opensAt")
	}
	if err := e.DrawSource.Check(); err != nil {
		return Errorf(CodeInvalidConfig, "%v", err)
	}
	return nil
}

// DrawStatus is an event's draw as anyone may see it: the commitment from
// scheduling on, the seed from the opening on (for a chain draw, once its
// entries are frozen: the root is published before the seed).
type DrawStatus struct {
	// Kind is classic or chain.
	Kind DrawKind `json:"kind"`
	// Commitment is the SHA-256 of the seed, hex (package draw).
	Commitment string `json:"commitment"`
	// Seed is the seed in hex; empty before the opening.
	Seed string `json:"seed,omitempty"`
	// PrequeueSize counts the users who joined during the pre-queue.
	PrequeueSize int64 `json:"prequeueSize"`
	// PublicSource is a chain draw's source, named before the pre-queue.
	PublicSource *draw.PublicSource `json:"publicSource,omitempty"`
	// EntryRoot and EntryCount are a chain draw's frozen entries.
	EntryRoot  string `json:"entryRoot,omitempty"`
	EntryCount *int   `json:"entryCount,omitempty"`
	// PublicValue is the value supplied (hex), once it is.
	PublicValue string `json:"publicValue,omitempty"`
	// PublicValueMissed says none was supplied by the deadline.
	PublicValueMissed bool `json:"publicValueMissed,omitempty"`
	// Deadline is when a chain draw is made without a value (unix ms).
	Deadline int64 `json:"deadline,omitempty"`
	// DrawnAt is when a chain draw was made (unix ms); until then its
	// pre-queue waits in the prequeue state and nobody is admitted.
	DrawnAt int64 `json:"drawnAt,omitempty"`
}

// DrawStatus returns e's draw at nowMs, revealing the seed only from the
// opening on (a chain draw's only once frozen); nil when e never had a
// draw. This is the one place the seed leaves the service.
func (e *Event) DrawStatus(nowMs, prequeueSize int64) *DrawStatus {
	if e.Seed == nil {
		return nil
	}
	d := &DrawStatus{Kind: DrawClassic, Commitment: e.Seed.Commitment(), PrequeueSize: prequeueSize}
	reveal := e.OpensAt > 0 && nowMs >= e.OpensAt
	if e.ChainDraw() {
		c := e.Chain
		d.Kind, d.PublicSource, d.Deadline = DrawChain, e.DrawSource, e.DrawDeadline()
		reveal = reveal && c.EntryRoot != ""
		if c.EntryRoot != "" {
			d.EntryRoot, d.EntryCount = c.EntryRoot, &c.EntryCount
		}
		d.PublicValue, d.DrawnAt = c.PublicValue, c.DrawnAt
		d.PublicValueMissed = c.DrawnAt > 0 && c.PublicValue == ""
	}
	if reveal {
		d.Seed = e.Seed.Hex()
	}
	return d
}

package queue

import (
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/waitq/waitq/pkg/draw"
)

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

// DrawChainState is a chain draw's state as stored. Each step is made,
// then recorded in the log (a drawfrozen, a drawmade record), then marked,
// and only then told (docs/data.md, "The draw in Redis").
type DrawChainState struct {
	// EntryRoot (hex) and EntryCount are the frozen entries' Merkle root
	// and count ("" before the freeze).
	EntryRoot  string
	EntryCount int
	// Marks are, by partition of the event's topic, the highest offset
	// applied when the entries froze: the pre-queue joins at or below
	// them are the entries (a rebuild's cut; none: -1), written
	// "<partition> <offset> ..." (ParseDrawMarks).
	Marks string
	// FreezeRecorded says the freeze's record is in the log: only then
	// are the root published and the seed revealed.
	FreezeRecorded bool
	// PublicValue is the value supplied (hex; "" none yet, or missed).
	PublicValue string
	// MadeAt is when the draw was made (unix ms; 0: not yet), DrawnAt the
	// same once its record is in the log: only then is it published and
	// the line admitted.
	MadeAt, DrawnAt int64
}

// Frozen reports whether c's entries froze (recorded or not).
func (c DrawChainState) Frozen() bool { return c.EntryRoot != "" }

// Records returns the records of c's steps made and not yet marked
// recorded, made at nowMs: a drawfrozen record, a drawmade record.
func (c DrawChainState) Records(eventID string, nowMs int64) []Message {
	var out []Message
	if c.Frozen() && !c.FreezeRecorded {
		m := NewRecord(OpDrawFrozen, eventID, "", nowMs)
		marks, _ := ParseDrawMarks(c.Marks) // checked when read
		m.Draw = &DrawRecord{Root: c.EntryRoot, Count: c.EntryCount, Marks: marks}
		out = append(out, m)
	}
	if c.MadeAt > 0 && c.DrawnAt == 0 {
		m := NewRecord(OpDrawMade, eventID, "", c.MadeAt)
		m.Draw = &DrawRecord{Root: c.EntryRoot, Value: c.PublicValue, Missed: c.PublicValue == ""}
		out = append(out, m)
	}
	return out
}

// Recorded returns c with the steps recs record marked recorded.
func (c DrawChainState) Recorded(recs []Message) DrawChainState {
	for _, m := range recs {
		switch {
		case m.Op == OpDrawFrozen && m.Draw.Root == c.EntryRoot:
			c.FreezeRecorded = true
		case m.Op == OpDrawMade && m.TS == c.MadeAt:
			c.DrawnAt = c.MadeAt
		}
	}
	return c
}

// ParseDrawMarks reads marks written "<partition> <offset> ...".
func ParseDrawMarks(v string) (map[int]int64, error) {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return nil, fmt.Errorf("queue: draw marks %.40q: pairs of partition and offset", v)
	}
	marks := make(map[int]int64, len(f)/2)
	for i := 0; i < len(f); i += 2 {
		p, err1 := strconv.Atoi(f[i])
		off, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("queue: draw marks %.40q: pairs of partition and offset", v)
		}
		marks[p] = off
	}
	return marks, nil
}

// FormatDrawMarks writes marks as ParseDrawMarks reads them, by partition.
func FormatDrawMarks(marks map[int]int64) string {
	var b []byte
	for _, p := range slices.Sorted(maps.Keys(marks)) {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(append(strconv.AppendInt(b, int64(p), 10), ' '), marks[p], 10)
	}
	return string(b)
}

// DrawRecord is a chain draw's step as its record carries it: a
// drawfrozen record's root, count and marks; a drawmade record's root and
// public value (Missed: none, past the deadline).
type DrawRecord struct {
	Root   string        `json:"root"`
	Count  int           `json:"count,omitempty"`
	Marks  map[int]int64 `json:"marks,omitempty"`
	Value  string        `json:"value,omitempty"`
	Missed bool          `json:"missed,omitempty"`
}

// validateDraw checks a drawfrozen or drawmade record.
func (m *Message) validateDraw() error {
	d := m.Draw
	switch {
	case d == nil || m.UserID != "":
		return fmt.Errorf("queue: %s record of %s lacks its draw or has a user id", m.Op, m.EventID)
	case len(d.Root) != 64 || d.Count < 0:
		return fmt.Errorf("queue: %s record of %s has a bad root or count", m.Op, m.EventID)
	case m.Op == OpDrawMade && d.Missed != (d.Value == ""):
		return fmt.Errorf("queue: drawmade record of %s: a value, or missed", m.EventID)
	}
	if _, err := hex.DecodeString(d.Root + d.Value); err != nil {
		return fmt.Errorf("queue: %s record of %s: root and value are hex", m.Op, m.EventID)
	}
	return nil
}

// DrawStepDue reports whether a chain draw's step is due at nowMs: its
// entries to freeze, its draw to make past the deadline, or a step made
// whose record is not yet in the log.
func (e *Event) DrawStepDue(nowMs int64) bool {
	c := e.Chain
	if !e.ChainDraw() || e.SaltKey == nil || e.Seed == nil || nowMs < e.DrawFreezeAt() {
		return false
	}
	return !c.FreezeRecorded || (c.DrawnAt == 0 && (c.MadeAt > 0 || nowMs >= e.DrawDeadline()))
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
		reveal = reveal && c.FreezeRecorded
		if c.FreezeRecorded {
			d.EntryRoot, d.EntryCount = c.EntryRoot, &c.EntryCount
		}
		if c.DrawnAt > 0 {
			d.PublicValue, d.DrawnAt = c.PublicValue, c.DrawnAt
			d.PublicValueMissed = c.PublicValue == ""
		}
	}
	if reveal {
		d.Seed = e.Seed.Hex()
	}
	return d
}

package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/waitq/waitq/pkg/draw"
)

// A drop's draw in the fold (Replay.State; docs/data.md, "Records"): a
// classic draw places every user who joined before the opening at their
// number under the seed. A chain draw does too until its drawfrozen
// record; from it on, only its entries are drawn (the users with a join
// stamped before the opening at or below the record's mark of their
// partition: the ones the pre-queue held when it froze), the others wait
// at their stamp; from its drawmade record on, the entries stand at their
// numbers under the effective seed (draw.Mix).

// joinOffsets are where a user's first joins lie in their partition: the
// first one read, and the earliest stamped. Either, stamped before the
// opening and at or below the freeze's mark, makes the user an entry.
type joinOffsets struct {
	part                    int
	headOff, headTS         int64 // the first join read (headTS 0: none)
	earliestOff, earliestTS int64 // the join with the earliest stamp
}

// add notes a join read at offset, stamped ts.
func (j *joinOffsets) add(offset, ts int64) {
	if j.headTS == 0 {
		j.headOff, j.headTS = offset, ts
	}
	if j.earliestTS == 0 || ts < j.earliestTS {
		j.earliestOff, j.earliestTS = offset, ts
	}
}

// entered reports whether a join before opensAt lies at or below marks'
// mark of the partition (none: -1, which only joins read at no offset
// meet).
func (j *joinOffsets) entered(opensAt int64, marks map[int]int64) bool {
	mark, ok := marks[j.part]
	if !ok {
		mark = NoOffset
	}
	return (j.headTS != 0 && j.headTS < opensAt && j.headOff <= mark) ||
		(j.earliestTS != 0 && j.earliestTS < opensAt && j.earliestOff <= mark)
}

// drawPlacer places a drop's drawn users (drawPlaces).
type drawPlacer struct {
	opensAt   int64
	classic   *draw.Drawer // nil: no draw
	effective *draw.Drawer // a chain draw made
	saltKey   [draw.SaltKeySize]byte
	marks     map[int]int64
	frozen    bool
}

// drawPlaces returns the placer of e's draw as the fold read it, and
// fills e's chain state from the draw's records.
func (r *Replay) drawPlaces(e *Event) drawPlacer {
	p := drawPlacer{opensAt: e.OpensAt}
	if e.Seed == nil || e.OpensAt <= 0 {
		return p
	}
	p.classic = draw.NewDrawer(*e.Seed)
	if !e.ChainDraw() || e.SaltKey == nil || r.Frozen == nil {
		return p
	}
	f := r.Frozen.Draw
	p.frozen, p.saltKey, p.marks = true, *e.SaltKey, f.Marks
	e.Chain = DrawChainState{EntryRoot: f.Root, EntryCount: f.Count, Marks: FormatDrawMarks(f.Marks), FreezeRecorded: true}
	if m := r.Made; m != nil && m.Draw.Root == f.Root {
		root, _ := hex.DecodeString(f.Root)        // checked by Validate
		value, _ := hex.DecodeString(m.Draw.Value) // checked by Validate
		p.effective = draw.NewDrawer(draw.Mix(*e.Seed, [sha256.Size]byte(root), value))
		e.Chain.PublicValue, e.Chain.MadeAt, e.Chain.DrawnAt = m.Draw.Value, m.TS, m.TS
	}
	return p
}

// drawn returns u's drawn score, and false when u is not drawn.
func (p drawPlacer) drawn(id string, u *replayUser) (int64, bool) {
	switch {
	case p.classic == nil || u.firstJn == 0 || u.firstJn >= p.opensAt:
		return 0, false
	case p.frozen && !u.joins.entered(p.opensAt, p.marks):
		return 0, false
	case p.effective != nil:
		return int64(draw.EntryNumber(p.effective, draw.UserEntry(p.saltKey, id))) - 1<<draw.Bits, true
	}
	return p.classic.Score(id), true
}

// CheckDraw reports a chain draw whose entries, as the fold found them in
// the pre-queue, are not those its drawfrozen record names: another root
// or count (a log that lost joins, or marks that cut elsewhere). Such a
// state would publish another draw than the one told.
func (st *Rebuilt) CheckDraw() error {
	e := st.Event
	c := e.Chain
	if !c.Frozen() || e.SaltKey == nil {
		return nil
	}
	es := make([]draw.Entry, 0, len(st.Prequeue))
	for id := range st.Prequeue {
		es = append(es, draw.UserEntry(*e.SaltKey, id))
	}
	_, t, err := draw.EntryTree(e.ID, es)
	if err != nil {
		return fmt.Errorf("the chain draw's entries: %w", err)
	}
	if root := t.Root(); root != c.EntryRoot || len(es) != c.EntryCount {
		return fmt.Errorf("the chain draw's entries rebuilt from the log hash to root %s (%d entries), but its drawfrozen record says %s (%d entries): the log does not hold the pre-queue that froze; nothing was written", root, len(es), c.EntryRoot, c.EntryCount)
	}
	return nil
}

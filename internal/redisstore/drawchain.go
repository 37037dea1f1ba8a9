package redisstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/draw"
)

// A chain draw's steps in Redis (docs/data.md, "The draw in Redis"): the
// freeze writes the entry root, count and marks into the config
// (draw_freeze.lua), the draw the public value and the time, and moves
// every drawn place to the number under the effective seed
// (draw_make.lua). Both are made once; the pre-queue no longer grows from
// the freeze on (ingest.lua), so the entries are always its members. Each
// is told only once marked recorded (draw_mark.lua): the steps
// (FreezeDrawStep, SupplyPublicValueStep) return their records, which
// package recording writes to the log before it marks them; the Store's
// own FreezeDraw and SupplyPublicValue mark them unwritten, for a store
// without a log.

var _ queue.DrawChains = (*Store)(nil)

// parseChain reads a chain draw's secret salt key and state from the
// config hash h into e.
func parseChain(h map[string]string, e *queue.Event, errs *[]error) {
	if hx, ok := h["drawSaltKey"]; ok {
		b, err := hex.DecodeString(hx)
		if err != nil || len(b) != draw.SaltKeySize {
			*errs = append(*errs, errors.New("field drawSaltKey: not 64 hex digits"))
		}
		var k [draw.SaltKeySize]byte
		copy(k[:], b)
		e.SaltKey = &k
	}
	c := &e.Chain
	c.EntryRoot, c.PublicValue, c.FreezeRecorded = h["drawRoot"], h["drawValue"], h["drawRecorded"] != ""
	if v, ok := h["drawMarks"]; ok {
		marks, err := queue.ParseDrawMarks(v)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("field drawMarks: %w", err))
		}
		c.Marks = queue.FormatDrawMarks(marks) // by partition, as Redis may list them in any order
	}
	for field, dst := range map[string]*int64{"drawnAt": &c.DrawnAt, "drawMadeAt": &c.MadeAt} {
		if v, ok := h[field]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				*errs = append(*errs, fmt.Errorf("field %s: %w", field, err))
			}
			*dst = n
		}
	}
	if v, ok := h["drawCount"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("field drawCount: %w", err))
		}
		c.EntryCount = n
	}
}

// chainFields are the config fields of a chain draw's state (parseChain).
var chainFields = []string{"drawRoot", "drawCount", "drawMarks", "drawRecorded", "drawValue", "drawMadeAt", "drawnAt"}

// chainHash returns c as its config fields (chainFields), those set.
func chainHash(c queue.DrawChainState) []any {
	if !c.Frozen() {
		return nil
	}
	h := []any{"drawRoot", c.EntryRoot, "drawCount", c.EntryCount, "drawMarks", c.Marks}
	if c.FreezeRecorded {
		h = append(h, "drawRecorded", "1")
	}
	if c.MadeAt > 0 {
		h = append(h, "drawValue", c.PublicValue, "drawMadeAt", c.MadeAt)
	}
	if c.DrawnAt > 0 {
		h = append(h, "drawnAt", c.DrawnAt)
	}
	return h
}

// FreezeDraw implements queue.DrawChains: FreezeDrawStep, its steps marked
// recorded without a log.
func (s *Store) FreezeDraw(ctx context.Context, e queue.Event, nowMs int64) (queue.DrawChainState, error) {
	st, c, err := s.FreezeDrawStep(ctx, e, nowMs)
	if err != nil {
		return st, err
	}
	return s.markDraw(ctx, st, c)
}

// markDraw marks c's records recorded and returns st so marked.
func (s *Store) markDraw(ctx context.Context, st queue.DrawChainState, c queue.Changes) (queue.DrawChainState, error) {
	if len(c.Records) == 0 {
		return st, nil
	}
	if err := s.MarkDrawRecorded(ctx, c); err != nil {
		return st, err
	}
	return st.Recorded(c.Records), nil
}

// FreezeDrawStep implements queue.StepStore: it freezes e's entries past
// their freeze time, and makes the draw without a value past its deadline,
// each once, and returns e's chain state with the records of the steps
// made and not yet marked recorded (queue.DrawChainState.Records).
func (s *Store) FreezeDrawStep(ctx context.Context, e queue.Event, nowMs int64) (queue.DrawChainState, queue.Changes, error) {
	st := e.Chain
	if !e.ChainDraw() || e.SaltKey == nil || e.Seed == nil || nowMs < e.DrawFreezeAt() {
		return st, queue.Changes{EventID: e.ID}, nil
	}
	if !st.Frozen() {
		root, count, marks, err := s.freeze(ctx, e)
		if err != nil {
			return st, queue.Changes{}, err
		}
		st.EntryRoot, st.EntryCount, st.Marks = root, count, marks
	}
	if st.MadeAt == 0 && nowMs >= e.DrawDeadline() {
		e.Chain = st
		switch err := s.makeDraw(ctx, e, nil, nowMs); {
		case err == nil:
			st.MadeAt = nowMs
		case queue.ErrorCode(err) == queue.CodePublicValueSet:
			// Another made it meanwhile: read what it made.
			cur, err := s.Event(ctx, e.ID)
			if err != nil {
				return st, queue.Changes{}, err
			}
			st = cur.Chain
		default:
			return st, queue.Changes{}, err
		}
	}
	return st, queue.Changes{EventID: e.ID, Records: st.Records(e.ID, nowMs)}, nil
}

// MarkDrawRecorded implements queue.StepStore: the chain draw's steps
// whose records c holds are told from now on (draw_mark.lua); an event
// being rebuilt marks nothing (its rebuild writes what the log holds).
func (s *Store) MarkDrawRecorded(ctx context.Context, c queue.Changes) error {
	var root, madeAt string
	for _, m := range c.Records {
		switch m.Op {
		case queue.OpDrawFrozen:
			root = m.Draw.Root
		case queue.OpDrawMade:
			madeAt = strconv.FormatInt(m.TS, 10)
		}
	}
	code, err := runScript(ctx, s.c, drawMarkScript, []string{ConfigKey(c.EventID)}, root, madeAt).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("redisstore: mark the draw of %s recorded: %w", c.EventID, err)
	case code == codeNoEvent:
		return queue.ErrEventNotFound
	case code == codeRebuilding:
		return queue.ErrRebuilding
	}
	return nil
}

// chainEntries reads e's pre-queue, in the line's order, and returns its
// users with their entries.
func (s *Store) chainEntries(ctx context.Context, e queue.Event) ([]string, []draw.Entry, error) {
	users, err := s.DrawOrder(ctx, e.ID)
	if err != nil {
		return nil, nil, err
	}
	es := make([]draw.Entry, len(users))
	for i, u := range users {
		es[i] = draw.UserEntry(*e.SaltKey, u)
	}
	return users, es, nil
}

// freeze writes e's entry root, count and marks, once; it returns those
// stored.
func (s *Store) freeze(ctx context.Context, e queue.Event) (string, int, string, error) {
	k := keysOf(e.ID)
	for range 3 {
		_, es, err := s.chainEntries(ctx, e)
		if err != nil {
			return "", 0, "", err
		}
		_, t, err := draw.EntryTree(e.ID, es)
		if err != nil {
			return "", 0, "", fmt.Errorf("redisstore: freeze %s: %w", e.ID, err)
		}
		root := t.Root()
		v, err := runScript(ctx, s.c, drawFreezeScript, []string{k.config, k.prequeue, k.offsets}, len(es), root).Result()
		if err != nil {
			return "", 0, "", fmt.Errorf("redisstore: freeze %s: %w", e.ID, err)
		}
		if reply, ok := v.([]any); ok && len(reply) == 3 {
			n, _ := reply[1].(int64)
			r, _ := reply[0].(string)
			marks, _ := reply[2].(string)
			m, err := queue.ParseDrawMarks(marks)
			if err != nil {
				return "", 0, "", fmt.Errorf("redisstore: freeze %s: %w", e.ID, err)
			}
			return r, int(n), queue.FormatDrawMarks(m), nil
		}
		if code, _ := v.(int64); code == codeNoEvent {
			return "", 0, "", queue.ErrEventNotFound
		}
	}
	return "", 0, "", fmt.Errorf("redisstore: freeze %s: the pre-queue kept changing", e.ID)
}

// makeDraw makes e's draw with value (nil: missed), once: every drawn
// place moves to its number under the effective seed.
func (s *Store) makeDraw(ctx context.Context, e queue.Event, value []byte, nowMs int64) error {
	users, es, err := s.chainEntries(ctx, e)
	if err != nil {
		return err
	}
	if len(users) != e.Chain.EntryCount {
		return fmt.Errorf("redisstore: draw %s: %d entries, %d frozen", e.ID, len(users), e.Chain.EntryCount)
	}
	root, err := hex.DecodeString(e.Chain.EntryRoot)
	if err != nil || len(root) != 32 {
		return fmt.Errorf("redisstore: draw %s: a corrupt entry root", e.ID)
	}
	d := draw.NewDrawer(draw.Mix(*e.Seed, [32]byte(root), value))
	args := make([]any, 0, 3+2*len(users))
	args = append(args, nowMs, e.Chain.EntryRoot, hex.EncodeToString(value))
	for i, u := range users {
		args = append(args, u, int64(draw.EntryNumber(d, es[i]))-1<<draw.Bits)
	}
	k := keysOf(e.ID)
	code, err := runScript(ctx, s.c, drawMakeScript, []string{k.config, k.prequeue, k.waiting, k.journal}, args...).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("redisstore: draw %s: %w", e.ID, err)
	case code == codeNoEvent:
		return queue.ErrEventNotFound
	case code == codePublicValueSet:
		return queue.Errorf(queue.CodePublicValueSet, "the public value of event %s was supplied already", e.ID)
	case code == codeDrawChanged:
		return fmt.Errorf("redisstore: draw %s: the entries froze under another root", e.ID)
	}
	return nil
}

// SupplyPublicValue implements queue.DrawChains: SupplyPublicValueStep,
// its steps marked recorded without a log.
func (s *Store) SupplyPublicValue(ctx context.Context, e queue.Event, value []byte, nowMs int64) (queue.DrawChainState, error) {
	st, c, err := s.SupplyPublicValueStep(ctx, e, value, nowMs)
	if err != nil {
		return st, err
	}
	return s.markDraw(ctx, st, c)
}

// SupplyPublicValueStep implements queue.StepStore: it makes e's draw with
// value, once (FreezeDrawStep first), and returns the records to write. A
// draw made with the same value whose record is not yet marked returns
// its records again: the retry of a supply whose record failed.
func (s *Store) SupplyPublicValueStep(ctx context.Context, e queue.Event, value []byte, nowMs int64) (queue.DrawChainState, queue.Changes, error) {
	if !e.ChainDraw() {
		return e.Chain, queue.Changes{}, queue.Errorf(queue.CodeNotChainDraw, "event %s names no public source: its draw is a classic one", e.ID)
	}
	st, c, err := s.FreezeDrawStep(ctx, e, nowMs)
	v := hex.EncodeToString(value)
	switch {
	case err != nil:
		return st, c, err
	case !st.Frozen():
		return st, c, queue.Errorf(queue.CodeDrawNotRevealed, "the entries of event %s freeze %d ms after its opening; supply the value after", e.ID, queue.DrawFreezeLagMs)
	case st.MadeAt > 0 && st.PublicValue == "":
		return st, c, queue.Errorf(queue.CodeDrawPublished, "the deadline of event %s passed: its draw was made without a public value and published", e.ID)
	case st.MadeAt > 0 && st.DrawnAt == 0 && st.PublicValue == v:
		return st, c, nil
	case st.MadeAt > 0:
		return st, c, queue.Errorf(queue.CodePublicValueSet, "the public value of event %s was supplied already", e.ID)
	}
	e.Chain = st
	if err := s.makeDraw(ctx, e, value, nowMs); err != nil {
		return st, c, err
	}
	st.PublicValue, st.MadeAt = v, nowMs
	return st, queue.Changes{EventID: e.ID, Records: st.Records(e.ID, nowMs)}, nil
}

// PublicChain implements queue.DrawChains.
func (s *Store) PublicChain(ctx context.Context, e queue.Event) (*draw.Chain, *draw.Tree, error) {
	if !e.ChainDraw() || e.SaltKey == nil || e.Seed == nil {
		return nil, nil, queue.Errorf(queue.CodeNotChainDraw, "event %s names no public source: its draw is a classic one", e.ID)
	}
	if e.Chain.DrawnAt == 0 {
		return nil, nil, queue.Errorf(queue.CodeDrawNotRevealed, "the draw of event %s is not made yet: it waits for its public value", e.ID)
	}
	_, es, err := s.chainEntries(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	value, err := hex.DecodeString(e.Chain.PublicValue)
	if err != nil {
		return nil, nil, fmt.Errorf("redisstore: draw %s: a corrupt public value", e.ID)
	}
	c, t, err := draw.BuildChain(e.ID, e.OpensAt, *e.Seed, e.DrawSource, value, es)
	if err != nil {
		return nil, nil, fmt.Errorf("redisstore: draw %s: %w", e.ID, err)
	}
	c.Order = make([]string, len(es))
	for i, x := range es {
		c.Order[i] = x.Hex()
	}
	return c, t, nil
}

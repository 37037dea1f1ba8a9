package redisstore

import (
	"cmp"
	"context"
	"fmt"

	"github.com/waitq/waitq/internal/queue"
)

// Tick does one slot-monitor tick for every event of req in one round
// trip: it removes waiting users whose presence is older than
// req.PresenceCutoffMs (at most req.SweepLimit per event) and lets go of
// the presences held by gateways silent since req.SilentCutoffMs, then runs the
// tick script (the admission step) with req.AdmitBatch, which tells the
// users it admits itself. TickStep is the same tick for a caller that
// records its changes (package recording).
func (s *Store) Tick(ctx context.Context, req queue.TickRequest) ([]queue.TickResult, error) {
	out, _, err := s.tick(ctx, req, false)
	return out, err
}

// TickStep is Tick whose admissions stay unrecorded (told to nobody) until
// the caller records them (MarkRecorded). Its changes hold, besides the
// tick's own, the admissions an admitter left unrecorded for longer than
// RecordGrace (each given a whole stay from req.NowMs: an unrecorded stay
// never ends, its user was never told) and the releases whose records a
// writer failed to write for as long (their slots stay counted until
// then). A result's Admitted lists the tick's own admissions.
func (s *Store) TickStep(ctx context.Context, req queue.TickRequest) ([]queue.TickResult, []queue.Changes, error) {
	out, cs, err := s.tick(ctx, req, true)
	if err != nil {
		return nil, nil, err
	}
	return out, steps(cs, req.NowMs), nil
}

func (s *Store) tick(ctx context.Context, req queue.TickRequest, recorded bool) ([]queue.TickResult, []changes, error) {
	eventIDs := req.EventIDs
	calls := make([]scriptCall, 0, 2*len(eventIDs))
	staleCutoff := int64(0)
	silent := cmp.Or(req.SilentCutoffMs, req.PresenceCutoffMs)
	awayAfter := int64(0) // the disconnect grace, after which a waiting person is away
	if req.PresenceCutoffMs > 0 {
		awayAfter = req.NowMs - req.PresenceCutoffMs
	}
	if recorded {
		staleCutoff = req.NowMs - RecordGrace.Milliseconds()
	}
	for _, ev := range eventIDs {
		k := keysOf(ev)
		calls = append(calls,
			scriptCall{sweepScript, []string{k.waiting, k.seen, k.config, k.journal, k.gateways}, []any{req.PresenceCutoffMs, req.SweepLimit, silent, req.NowMs}},
			scriptCall{tickScript, k.tick(), []any{req.NowMs, req.AdmitBatch, ev, AdmissionsChannel, recordArg(recorded), staleCutoff, awayAfter, queue.ReleasedKeep.Milliseconds()}})
	}
	if len(calls) == 0 {
		return nil, nil, nil
	}
	cmds, err := s.pipeline(ctx, calls)
	if err != nil {
		return nil, nil, fmt.Errorf("redisstore: monitor tick over %d events: %w", len(eventIDs), err)
	}
	out := make([]queue.TickResult, len(eventIDs))
	cs := make([]changes, 0, len(eventIDs))
	for i, ev := range eventIDs {
		r := queue.TickResult{EventID: ev}
		c, err := tickChanges(ev, cmds[2*i].Val(), cmds[2*i+1].Val(), req.NowMs, &r)
		if err != nil {
			return nil, nil, fmt.Errorf("redisstore: monitor tick of %s: %w", ev, err)
		}
		out[i] = r
		cs = append(cs, c)
	}
	return out, cs, nil
}

// tickChanges fills r from a sweep's and a tick's replies and returns
// the changes to record.
func tickChanges(ev string, sweep, tick any, nowMs int64, r *queue.TickResult) (changes, error) {
	c := changes{event: ev}
	swept, err := decodeSweepReply(sweep)
	if err != nil {
		return c, err
	}
	for _, k := range swept {
		r.Swept = append(r.Swept, k.user)
		m := queue.NewRecord(queue.OpSweep, ev, k.user, nowMs)
		m.Score = k.score
		c.other = append(c.other, m)
	}
	switch v := tick.(type) {
	case int64:
		if v != codeNoEvent {
			break
		}
		r.Unknown = true
		return c, nil
	case []any:
		t, err := decodeTickReply(v)
		if err != nil {
			return c, err
		}
		r.ExpiresAt, r.Holders, r.Waiting = t.admit.expiresAt, t.holders, t.waiting
		r.HoldsExpired, r.NoShows = int(t.holdsExpired), int(t.noShows)
		for _, a := range t.admit.admitted {
			r.Admitted = append(r.Admitted, a.user)
			c.fresh = append(c.fresh, a.user)
		}
		r.Expired = int64(len(t.admit.expired))
		c.admitted, c.ended = t.admit.admitted, t.admit.expired
		// A stale triple is user, end of hold, served mark: the place it
		// left is not known any more; the served mark (at or after it)
		// stands for it.
		for _, a := range t.stale {
			a.expires, a.score = a.score, a.served
			c.admitted = append(c.admitted, a)
		}
		r.Recovered = len(t.stale)
		for _, cl := range t.called {
			r.Called = append(r.Called, cl.user)
			m := queue.NewRecord(queue.OpCall, ev, cl.user, nowMs)
			m.Score, m.ExpiresAt, m.ServedMark = cl.score, cl.expires, cl.served
			c.other = append(c.other, m)
		}
		for _, u := range t.lapsed {
			r.Lapsed = append(r.Lapsed, u)
			c.other = append(c.other, queue.NewRecord(queue.OpLapse, ev, u, nowMs))
		}
		for _, member := range t.freeing {
			m, err := freeingRelease(ev, member, nowMs)
			if err != nil {
				return c, err
			}
			c.other = append(c.other, m)
			c.freed = append(c.freed, member)
		}
		return c, nil
	}
	return c, fmt.Errorf("tick: unexpected reply %v", tick)
}

// swept is a user sweep.lua took out of the line, and the place they left.
type swept struct {
	user  string
	score int64
}

// decodeSweepReply reads sweep.lua's reply (its header's "Returns": pairs
// user, score).
func decodeSweepReply(v any) ([]swept, error) {
	l, ok := v.([]any)
	if !ok || len(l)%2 != 0 {
		return nil, fmt.Errorf("sweep: unexpected reply %v", v)
	}
	out := make([]swept, 0, len(l)/2)
	for i := 0; i < len(l); i += 2 {
		u, _ := l[i].(string)
		score, _ := l[i+1].(int64)
		out = append(out, swept{u, score})
	}
	return out, nil
}

// tickReply is tick.lua's list reply.
type tickReply struct {
	admit            admitReply
	holders, waiting int64          // after the admission
	stale            []admittedUser // user, renewed end of hold (as score), served mark
	holdsExpired     int64          // item holds ended with the expired holders
	freeing          []string       // the releases to record again
	called           []admittedUser // user, place score, end of the claim window (as expires), served mark
	lapsed           []string       // the turns that lapsed
	noShows          int64          // no-shows whose slots were freed (their releases among freeing)
}

// decodeTickReply reads tick.lua's list reply (its header's "Returns":
// {expiresAt, holders, waiting, admitted, dropped, stale, ended, freeing,
// called, lapsed, noShows}).
func decodeTickReply(v []any) (tickReply, error) {
	var t tickReply
	if len(v) != 11 {
		return t, fmt.Errorf("tick: unexpected reply %v", v)
	}
	var err error
	if t.admit, err = decodeAdmit(v[0], v[3], v[4]); err != nil {
		return t, fmt.Errorf("tick: %w", err)
	}
	t.holders, _ = v[1].(int64)
	t.waiting, _ = v[2].(int64)
	t.holdsExpired, _ = v[6].(int64)
	t.noShows, _ = v[10].(int64)
	if t.stale, err = triples(v[5]); err != nil {
		return t, fmt.Errorf("tick: %w", err)
	}
	if t.freeing, err = users(v[7]); err != nil {
		return t, fmt.Errorf("tick: %w", err)
	}
	if t.called, err = quads(v[8]); err != nil {
		return t, fmt.Errorf("tick: %w", err)
	}
	if t.lapsed, err = users(v[9]); err != nil {
		return t, fmt.Errorf("tick: %w", err)
	}
	return t, nil
}

package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/waitq/waitq/internal/queue"
)

// Tick does one slot-monitor round for every event of req in one round
// trip: it removes waiting users whose presence is older than
// req.PresenceCutoffMs (at most req.SweepLimit per event), then runs the
// admit script with req.AdmitBatch. With a recorder (Options.Recorder) it then
// writes the round's changes to the log, with the admissions an admitter
// left unlogged for longer than RecordGrace, and only then tells the users:
// a result's Admitted lists the admissions now logged.
func (s *Store) Tick(ctx context.Context, req queue.TickRequest) ([]queue.TickResult, error) {
	eventIDs := req.EventIDs
	calls := make([]scriptCall, 0, 2*len(eventIDs))
	staleCutoff := int64(0)
	if s.recorder != nil {
		staleCutoff = req.NowMs - RecordGrace.Milliseconds()
	}
	for _, ev := range eventIDs {
		k := keysOf(ev)
		calls = append(calls,
			scriptCall{sweepScript, []string{k.waiting, k.seen, k.config}, []any{req.PresenceCutoffMs, req.SweepLimit}},
			scriptCall{admitScript, k.admission(), []any{req.NowMs, req.AdmitBatch, ev, AdmissionsChannel, s.journal(), staleCutoff}})
	}
	if len(calls) == 0 {
		return nil, nil
	}
	cmds, err := s.pipeline(ctx, calls)
	if err != nil {
		return nil, fmt.Errorf("redisstore: monitor tick over %d events: %w", len(eventIDs), err)
	}
	out := make([]queue.TickResult, len(eventIDs))
	cs := make([]changes, 0, len(eventIDs))
	for i, ev := range eventIDs {
		r := queue.TickResult{EventID: ev}
		c, err := tickChanges(ev, cmds[2*i].Val(), cmds[2*i+1].Val(), req.NowMs, &r)
		if err != nil {
			return nil, fmt.Errorf("redisstore: monitor tick of %s: %w", ev, err)
		}
		out[i] = r
		cs = append(cs, c)
	}
	logged := s.record(ctx, req.NowMs, cs)
	for i := range out {
		out[i].Admitted = nil
		for _, u := range logged[out[i].EventID] {
			if slices.Contains(cs[i].fresh, u) {
				out[i].Admitted = append(out[i].Admitted, u)
			}
		}
	}
	return out, nil
}

// tickChanges fills r from a sweep's and an admit's replies and returns
// the changes to record.
func tickChanges(ev string, sweep, adm any, nowMs int64, r *queue.TickResult) (changes, error) {
	c := changes{event: ev}
	swept, ok := sweep.([]any)
	if !ok || len(swept)%2 != 0 {
		return c, fmt.Errorf("sweep: unexpected reply %v", sweep)
	}
	for i := 0; i < len(swept); i += 2 {
		u, _ := swept[i].(string)
		score, _ := swept[i+1].(int64)
		r.Swept = append(r.Swept, u)
		m := queue.NewRecord(queue.OpSweep, ev, u, nowMs)
		m.Score = score
		c.other = append(c.other, m)
	}
	switch v := adm.(type) {
	case int64: // -1: no configuration
		r.Unknown = true
		return c, nil
	case []any:
		if len(v) != 6 {
			return c, fmt.Errorf("admit: unexpected reply %v", v)
		}
		r.ExpiresAt, _ = v[0].(int64)
		r.Holders, _ = v[1].(int64)
		r.Waiting, _ = v[2].(int64)
		ac, err := scriptChanges(ev, v[0], v[3], v[4])
		if err != nil {
			return c, err
		}
		stale, err := triples(v[5])
		if err != nil {
			return c, err
		}
		for _, a := range ac.admitted {
			r.Admitted = append(r.Admitted, a.user)
			c.fresh = append(c.fresh, a.user)
		}
		r.Dropped = int64(len(ac.ended))
		// A stale triple is user, end of hold, served mark: the place it
		// left is not known any more; the served mark (at or after it)
		// stands for it.
		for _, a := range stale {
			a.expires, a.score = a.score, a.served
			ac.admitted = append(ac.admitted, a)
		}
		r.Recovered = len(stale)
		c.admitted, c.ended = ac.admitted, ac.ended
		return c, nil
	}
	return c, fmt.Errorf("admit: unexpected reply %v", adm)
}

// Release gives userID's slot of eventID back; it reports whether they held
// an unexpired slot (so releasing twice frees one slot). With the fast track
// on (Options.FastTrack) the freed slot goes to the next in line in the same
// step. With a recorder the release and those admissions are written to the
// log. While the event is rebuilt it fails with queue.ErrRebuilding.
func (s *Store) Release(ctx context.Context, eventID, userID string, nowMs int64) (bool, error) {
	k := keysOf(eventID)
	v, err := runScript(ctx, s.c, releaseScript, k.admission(),
		userID, nowMs, s.fastTrack, eventID, AdmissionsChannel, s.journal()).Result()
	if err != nil {
		return false, fmt.Errorf("redisstore: release %s in %s: %w", userID, eventID, err)
	}
	if n, ok := v.(int64); ok && n == -3 {
		return false, queue.ErrRebuilding
	}
	l, ok := v.([]any)
	if !ok || len(l) != 4 {
		return false, fmt.Errorf("redisstore: release %s in %s: unexpected reply %v", userID, eventID, v)
	}
	released, _ := l[0].(int64)
	c, err := scriptChanges(eventID, l[1], l[2], l[3])
	if err != nil {
		return false, fmt.Errorf("redisstore: release %s in %s: %w", userID, eventID, err)
	}
	if released == 1 {
		c.other = append(c.other, queue.NewRecord(queue.OpRelease, eventID, userID, nowMs))
	}
	s.record(ctx, nowMs, []changes{c})
	return released == 1, nil
}

// SubscribeAdmissions calls f with every admission any service makes,
// as published on AdmissionsChannel, until ctx ends. A notification missed
// while the subscription reconnects is not replayed: the next status tick
// tells the user.
func (s *Store) SubscribeAdmissions(ctx context.Context, f func(queue.Admission)) error {
	sub := s.c.Subscribe(ctx, AdmissionsChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the server's confirmation
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("redisstore: subscribe to admissions: %w", err)
	}
	ch := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			var a queue.Admission
			if err := json.Unmarshal([]byte(m.Payload), &a); err != nil {
				return fmt.Errorf("redisstore: admission notice %q: %w", m.Payload, err)
			}
			f(a)
		}
	}
}

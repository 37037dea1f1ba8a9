package redisstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/waitq/waitq/pkg/queue"
)

// Tick does one slot-monitor round for every event of req in one round
// trip: it removes waiting users whose presence is older than
// req.PresenceCutoffMs (at most req.SweepLimit per event), then runs the
// admit script with req.AdmitBatch.
func (s *Store) Tick(ctx context.Context, req queue.TickRequest) ([]queue.TickResult, error) {
	eventIDs := req.EventIDs
	calls := make([]scriptCall, 0, 2*len(eventIDs))
	for _, ev := range eventIDs {
		k := keysOf(ev)
		calls = append(calls,
			scriptCall{sweepScript, []string{k.waiting, k.seen}, []any{req.PresenceCutoffMs, req.SweepLimit}},
			scriptCall{admitScript, k.admission(), []any{req.NowMs, req.AdmitBatch, ev, AdmissionsChannel}})
	}
	if len(calls) == 0 {
		return nil, nil
	}
	cmds, err := s.pipeline(ctx, calls)
	if err != nil {
		return nil, fmt.Errorf("redisstore: monitor tick over %d events: %w", len(eventIDs), err)
	}
	out := make([]queue.TickResult, len(eventIDs))
	for i, ev := range eventIDs {
		r := queue.TickResult{EventID: ev}
		swept, err := cmds[2*i].StringSlice()
		if err != nil {
			return nil, fmt.Errorf("redisstore: sweep %s: %w", ev, err)
		}
		r.Swept = swept
		switch v := cmds[2*i+1].Val().(type) {
		case int64: // -1: no configuration
			r.Unknown = true
		case []any:
			if len(v) < 4 {
				return nil, fmt.Errorf("redisstore: admit %s: short reply %v", ev, v)
			}
			r.ExpiresAt, _ = v[0].(int64)
			r.Dropped, _ = v[1].(int64)
			r.Holders, _ = v[2].(int64)
			r.Waiting, _ = v[3].(int64)
			for _, u := range v[4:] {
				if s, ok := u.(string); ok {
					r.Admitted = append(r.Admitted, s)
				}
			}
		default:
			return nil, fmt.Errorf("redisstore: admit %s: unexpected reply %v", ev, v)
		}
		out[i] = r
	}
	return out, nil
}

// Release gives userID's slot of eventID back; it reports whether they held
// an unexpired slot (so releasing twice frees one slot). With the fast track
// on (WithFastTrack) the freed slot goes to the next in line in the same
// step.
func (s *Store) Release(ctx context.Context, eventID, userID string, nowMs int64) (bool, error) {
	k := keysOf(eventID)
	n, err := runScript(ctx, s.c, releaseScript, k.admission(),
		userID, nowMs, s.fastTrack, eventID, AdmissionsChannel).Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: release %s in %s: %w", userID, eventID, err)
	}
	return n == 1, nil
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

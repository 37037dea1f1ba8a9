package redisstore

import (
	"context"
	"fmt"

	"github.com/waitq/waitq/pkg/queue"
)

// StatusChunk is the most users one status script call reads; larger sets
// are split into several calls of the same pipelined round trip, so no call
// blocks Redis for long.
const StatusChunk = 1000

// Status reads where users stand in eventID, in one round trip, and marks
// the waiting ones as present.
func (s *Store) Status(ctx context.Context, eventID string, users []string, nowMs int64) (queue.StatusBatch, error) {
	keys := []string{WaitingKey(eventID), ActiveKey(eventID), SeenKey(eventID), StatsKey(eventID)}
	var calls []scriptCall
	for start := 0; start == 0 || start < len(users); start += StatusChunk {
		chunk := users[start:min(start+StatusChunk, len(users))]
		args := make([]any, 0, 1+len(chunk))
		args = append(args, nowMs)
		for _, u := range chunk {
			args = append(args, u)
		}
		calls = append(calls, scriptCall{statusScript, keys, args})
	}
	cmds, err := s.pipeline(ctx, calls)
	if err != nil {
		return queue.StatusBatch{}, fmt.Errorf("redisstore: status %s: %w", eventID, err)
	}
	b := queue.StatusBatch{Places: make([]queue.Place, 0, len(users))}
	for i, cmd := range cmds {
		v, err := cmd.Int64Slice()
		if err != nil || len(v) < 2 || len(v)%2 != 0 {
			return queue.StatusBatch{}, fmt.Errorf("redisstore: status %s: unexpected reply %v (%v)", eventID, cmd.Val(), err)
		}
		if i == 0 {
			b.Total, b.AdmittedTotal = v[0], v[1]
		}
		for j := 2; j < len(v); j += 2 {
			b.Places = append(b.Places, queue.Place{Rank: v[j], HoldUntil: v[j+1]})
		}
	}
	return b, nil
}

// Tick does one slot-monitor round for every event in one round trip: it
// removes waiting users whose presence is older than presenceCutoffMs (at
// most sweepLimit per event), then runs the admit script with batch.
func (s *Store) Tick(ctx context.Context, eventIDs []string, nowMs int64, batch int, presenceCutoffMs int64, sweepLimit int) ([]queue.TickResult, error) {
	calls := make([]scriptCall, 0, 2*len(eventIDs))
	for _, ev := range eventIDs {
		calls = append(calls,
			scriptCall{sweepScript, []string{WaitingKey(ev), SeenKey(ev)}, []any{presenceCutoffMs, sweepLimit}},
			scriptCall{admitScript, eventKeys(ev), []any{nowMs, batch}})
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
// an unexpired slot (so releasing twice frees one slot).
func (s *Store) Release(ctx context.Context, eventID, userID string, nowMs int64) (bool, error) {
	n, err := runScript(ctx, s.c, releaseScript, []string{ActiveKey(eventID)}, userID, nowMs).Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: release %s in %s: %w", userID, eventID, err)
	}
	return n == 1, nil
}

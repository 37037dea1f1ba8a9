package redisstore

import (
	"context"
	"fmt"

	"github.com/waitq/waitq/pkg/queue"
)

// Ingest applies msgs to the waiting lines, in order per event, with one
// script call per event, all in one pipelined round trip; with the fast
// track on (WithFastTrack) each call then admits from the head of the line
// while there is room. On error nothing
// can be assumed written; applying the same messages again is harmless (a
// replayed sequence of joins and leaves ends in the same state).
func (s *Store) Ingest(ctx context.Context, msgs []queue.Message, nowMs int64) (queue.IngestResult, error) {
	var order []string
	args := make(map[string][]any)
	for i := range msgs {
		m := &msgs[i]
		a, ok := args[m.EventID]
		if !ok {
			order = append(order, m.EventID)
			a = append(make([]any, 0, 4+3*len(msgs)), nowMs, s.fastTrack, m.EventID, AdmissionsChannel)
		}
		args[m.EventID] = append(a, string(m.Op), m.UserID, m.TS)
	}
	var res queue.IngestResult
	if len(order) == 0 {
		return res, nil
	}
	calls := make([]scriptCall, len(order))
	for i, ev := range order {
		k := keysOf(ev)
		calls[i] = scriptCall{ingestScript, []string{k.config, k.waiting, k.active, k.served, k.stats, k.seen}, args[ev]}
	}
	cmds, err := s.pipeline(ctx, calls)
	if err != nil {
		return res, fmt.Errorf("redisstore: ingest %d messages: %w", len(msgs), err)
	}
	for i, cmd := range cmds {
		v := cmd.Val()
		if n, ok := v.(int64); ok && n == -1 {
			res.UnknownEvents = append(res.UnknownEvents, order[i])
			continue
		}
		counts, ok := v.([]any)
		if !ok || len(counts) != 4 {
			return res, fmt.Errorf("redisstore: ingest %s: unexpected reply %v", order[i], v)
		}
		res.Joined += int(counts[0].(int64))
		res.Left += int(counts[1].(int64))
		res.Ignored += int(counts[2].(int64))
		res.Admitted += int(counts[3].(int64))
	}
	return res, nil
}

package redisstore

import (
	"context"
	"fmt"

	"github.com/waitq/waitq/internal/queue"
)

// StatusChunk is the most users one status script call reads; larger sets
// are split into several calls of the same pipelined round trip, so no call
// blocks Redis for long.
const StatusChunk = 1000

// Status reads where users stand in eventID, in one round trip, and marks
// the waiting ones as present.
func (s *Store) Status(ctx context.Context, eventID string, users []string, nowMs int64) (queue.StatusBatch, error) {
	k := keysOf(eventID)
	keys := []string{k.waiting, k.active, k.seen, k.stats, k.prequeue, k.config, k.control, k.unrecorded, k.served}
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
	b := queue.StatusBatch{Places: make([]queue.Place, 0, len(users)), SlotAt: make([]int64, 0, len(users))}
	for i, cmd := range cmds {
		v, err := cmd.Int64Slice()
		if err != nil || len(v) < 3 || (len(v)-3)%4 != 0 {
			return queue.StatusBatch{}, fmt.Errorf("redisstore: status %s: unexpected reply %v (%v)", eventID, cmd.Val(), err)
		}
		if i == 0 {
			b.Total, b.AdmittedTotal, b.AdmitPerMinute = v[0], v[1], v[2]
		}
		for j := 3; j < len(v); j += 4 {
			b.Places = append(b.Places, queue.Place{Rank: v[j], HoldUntil: v[j+1], Drawn: v[j+2] + 1})
			b.SlotAt = append(b.SlotAt, max(v[j+3], 0))
		}
	}
	return b, nil
}

package redisstore

import (
	"context"
	"fmt"

	"github.com/waitq/waitq/internal/queue"
)

// Arrive marks userID's admission of eventID ending at holdUntil arrived
// (arrive.lua), if it is their current one: its slot is then never freed
// as a no-show's. first reports the admission's first arrival, counted in
// stats.arrivedTotal.
func (s *Store) Arrive(ctx context.Context, eventID, userID string, holdUntil, nowMs int64) (arrived, first bool, err error) {
	k := keysOf(eventID)
	n, err := runScript(ctx, s.c, arriveScript, []string{k.config, k.holders, k.unrecorded, k.arrived, k.stats}, userID, holdUntil, nowMs).Int64()
	if err != nil {
		return false, false, fmt.Errorf("redisstore: arrival of %s in %s: %w", userID, eventID, err)
	}
	switch n {
	case codeNoEvent:
		return false, false, queue.ErrEventNotFound
	case codeRebuilding:
		return false, false, queue.ErrRebuilding
	}
	return n > 0, n == 1, nil
}

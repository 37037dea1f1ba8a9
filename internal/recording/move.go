package recording

import (
	"context"
	"fmt"

	"github.com/waitq/waitq/internal/queue"
)

var _ queue.ResumeStore = (*Store)(nil)

// Move moves the place a resume link binds (queue.ResumeStore) and records
// it before it answers: the moved record on the old user's key, the
// movedin record on the new user's, in one write. The move is made first
// (move.lua checks and moves in one step; a record written first could
// not be taken back when the step refuses). A write that fails is kept
// with the sweeps and calls (pendingRecords, written first with the next
// records) and answered ErrBrokerUnavailable; the page asks again with the
// same link, which move.lua answers as the same move ('again', nothing
// changed), and its records are written again: the fold applies each
// once (queue.Replay).
func (s *Store) Move(ctx context.Context, m queue.Move) (queue.Moved, error) {
	moved, err := s.Live.Move(ctx, m)
	if err != nil || moved.Same {
		return moved, err
	}
	recs := moved.Records(m.Resume.EventID, m)
	if err := s.log.Record(ctx, recs); err != nil {
		kept, dropped := s.pending.keep(recs)
		s.logger.Warn("recording a move failed; its records are written with the next ones",
			"what", fmt.Sprintf("move in %s from %s to %s", m.Resume.EventID, m.Resume.UserID, m.To), "kept", kept, "dropped", dropped, "err", err)
		return queue.Moved{}, queue.ErrBrokerUnavailable
	}
	return moved, nil
}

package recording

import (
	"context"
	"fmt"

	"github.com/waitq/waitq/internal/queue"
)

// Hold holds item for userID (queue.HoldStore) and records the hold before
// it answers: a hold answered is in the log. A failure to record is
// returned (ErrBrokerUnavailable) with the hold kept: holding again answers
// the same hold and records it again.
func (s *Store) Hold(ctx context.Context, eventID, userID, item string, nowMs int64) (queue.HoldResult, error) {
	r, err := s.Live.Hold(ctx, eventID, userID, item, nowMs)
	if err != nil {
		return queue.HoldResult{}, err
	}
	m := queue.NewRecord(queue.OpHold, eventID, userID, nowMs)
	m.Item, m.ExpiresAt = item, r.Hold.ExpiresAt
	if err := s.now(ctx, fmt.Sprintf("hold %s for %s in %s", item, userID, eventID), m); err != nil {
		return queue.HoldResult{}, err
	}
	return r, nil
}

// Unhold gives item back if userID holds it (queue.HoldStore) and records
// a hold removed, live or dead.
func (s *Store) Unhold(ctx context.Context, eventID, userID, item string, nowMs int64) (bool, error) {
	removed, live, err := s.Live.UnholdStep(ctx, eventID, userID, item, nowMs)
	if err != nil {
		return false, err
	}
	if removed {
		m := queue.NewRecord(queue.OpUnhold, eventID, userID, nowMs)
		m.Item = item
		if err := s.now(ctx, fmt.Sprintf("unhold %s by %s in %s", item, userID, eventID), m); err != nil {
			return false, err
		}
	}
	return live, nil
}

// Confirm sells item to userID (queue.HoldStore) and records the sale
// before it answers; confirming again records it again, so a failure to
// record (ErrBrokerUnavailable) is mended by a retry.
func (s *Store) Confirm(ctx context.Context, eventID, userID, item string, nowMs int64) (queue.Sale, bool, error) {
	sale, fresh, err := s.Live.Confirm(ctx, eventID, userID, item, nowMs)
	if err != nil {
		return queue.Sale{}, false, err
	}
	m := queue.NewRecord(queue.OpSold, eventID, userID, nowMs)
	m.Item = item
	if err := s.now(ctx, fmt.Sprintf("confirm %s for %s in %s", item, userID, eventID), m); err != nil {
		return queue.Sale{}, false, err
	}
	return sale, fresh, nil
}

// Unsell undoes item's sale and returns it (queue.HoldStore); ok is false
// when the item is not sold. The unsold record (of the buyer) is written
// first, then the store frees the item if it is still sold to that buyer:
// a failure to record (ErrBrokerUnavailable) changes nothing, and a crash
// between the two leaves the item sold live with its undo in the log,
// which a repeat of the call writes again and applies.
func (s *Store) Unsell(ctx context.Context, eventID, item string, nowMs int64) (queue.Sale, bool, error) {
	what := fmt.Sprintf("unsell %s in %s", item, eventID)
	return s.Live.UnsellStep(ctx, eventID, item, nowMs, func(sale queue.Sale) error {
		m := queue.NewRecord(queue.OpUnsold, eventID, sale.UserID, nowMs)
		m.Item = item
		return s.now(ctx, what, m)
	})
}

// now writes m to the log; a failure is ErrBrokerUnavailable (logged).
func (s *Store) now(ctx context.Context, what string, m queue.Message) error {
	if err := s.log.Record(ctx, []queue.Message{m}); err != nil {
		s.logger.Warn("recording failed", "what", what, "err", err)
		return queue.ErrBrokerUnavailable
	}
	return nil
}

package recording

import (
	"context"
	"errors"

	"github.com/waitq/waitq/internal/queue"
)

// A chain draw's steps (docs/data.md, "Records"): the freeze and the draw
// are made in the live state, then written to the log (drawfrozen,
// drawmade), then marked, and only then told (the root published and the
// seed revealed; the draw published and the line admitted). A step whose
// record could not be written stays made and untold: the next read past
// its time (a status, the report) or the operator's retry of the value
// writes it again.

var (
	_ queue.DrawChains  = (*Store)(nil)
	_ queue.ReportStore = (*Store)(nil)
)

// FreezeDraw freezes e's entries, or makes its draw without a value, when
// due (queue.DrawChains), and records and marks what it made. A failure to
// record is logged and returns the state as told (nothing new): a read
// goes on.
func (s *Store) FreezeDraw(ctx context.Context, e queue.Event, nowMs int64) (queue.DrawChainState, error) {
	st, c, err := s.Live.FreezeDrawStep(ctx, e, nowMs)
	if err != nil {
		return e.Chain, err
	}
	if marked, err := s.recordDraw(ctx, st, c); err == nil {
		return marked, nil
	}
	return st, nil // its untold steps are not shown (queue.Event.DrawStatus)
}

// SupplyPublicValue makes e's draw with value (queue.DrawChains) and
// records it before it answers; a failure to record is
// ErrBrokerUnavailable, the draw made and untold: the same value again
// writes it again, another is refused (public_value_set).
func (s *Store) SupplyPublicValue(ctx context.Context, e queue.Event, value []byte, nowMs int64) (queue.DrawChainState, error) {
	st, c, err := s.Live.SupplyPublicValueStep(ctx, e, value, nowMs)
	if err != nil {
		return st, err
	}
	return s.recordDraw(ctx, st, c)
}

// recordDraw writes c's records, then marks them (MarkDrawRecorded), and
// returns st so marked.
func (s *Store) recordDraw(ctx context.Context, st queue.DrawChainState, c queue.Changes) (queue.DrawChainState, error) {
	if len(c.Records) == 0 {
		return st, nil
	}
	if err := s.log.Record(ctx, c.Records); err != nil {
		s.logger.Warn("recording a chain draw's step failed; it is told once written", "event", c.EventID, "records", len(c.Records), "err", err)
		return st, queue.ErrBrokerUnavailable
	}
	if err := s.Live.MarkDrawRecorded(ctx, c); err != nil {
		s.logger.Warn("marking a chain draw's step recorded failed; it is written and marked again", "event", c.EventID, "err", err)
		return st, err
	}
	return st.Recorded(c.Records), nil
}

// EventStatus returns id's status (queue.EventStore), a chain draw's steps
// due made and recorded first (FreezeDraw).
func (s *Store) EventStatus(ctx context.Context, id string, nowMs int64) (queue.EventStatus, error) {
	st, err := s.Live.EventStatusStep(ctx, id, nowMs)
	if err != nil || !st.Event.DrawStepDue(nowMs) {
		return st, err
	}
	st.Event.Chain, err = s.FreezeDraw(ctx, st.Event, nowMs)
	return st, err
}

// FairnessReport returns id's report (queue.ReportStore), a chain draw's
// steps due made and recorded first (FreezeDraw).
func (s *Store) FairnessReport(ctx context.Context, id string, nowMs int64) (queue.FairnessReport, error) {
	e, err := s.Live.Event(ctx, id)
	if err != nil && !errors.Is(err, queue.ErrEventNotFound) {
		return queue.FairnessReport{}, err
	}
	if err == nil && e.DrawStepDue(nowMs) {
		if _, err := s.FreezeDraw(ctx, e, nowMs); err != nil {
			return queue.FairnessReport{}, err
		}
	}
	return s.Live.FairnessReportStep(ctx, id, nowMs)
}

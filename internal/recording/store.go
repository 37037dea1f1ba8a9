package recording

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/waitq/waitq/internal/queue"
)

// Live is what a Store wraps: the live state's ports, and its steps whose
// changes the Store records (queue.StepStore).
type Live interface {
	queue.EventStore
	queue.GatewayStore
	queue.IngestStore
	queue.RebuildStore
	queue.DoorStore
	queue.StepStore
	queue.ResumeStore
	queue.ReportStore
	queue.AddressStore
}

// Store is the live state whose changes are recorded in the log before
// anyone is told of them.
type Store struct {
	Live
	log     queue.Recorder
	pending *pendingRecords
	logger  *slog.Logger
}

// A Store is the live state to every service.
var (
	_ queue.EventStore   = (*Store)(nil)
	_ queue.GatewayStore = (*Store)(nil)
	_ queue.IngestStore  = (*Store)(nil)
	_ queue.RebuildStore = (*Store)(nil)
	_ queue.DoorStore    = (*Store)(nil)
)

// New returns live whose changes are recorded through log; failures to
// record are reported to logger (nil: discarded).
func New(live Live, log queue.Recorder, logger *slog.Logger) *Store {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{Live: live, log: log, pending: &pendingRecords{}, logger: logger}
}

// Ingest applies msgs, which have no place in the log (queue.NoOffset), as
// IngestLog does.
func (s *Store) Ingest(ctx context.Context, msgs []queue.Message, nowMs int64) (queue.IngestResult, error) {
	return s.IngestLog(ctx, queue.NoOffsets(msgs), nowMs)
}

// IngestLog applies msgs (queue.IngestStore) and records the fast
// track's admissions before their users are told.
func (s *Store) IngestLog(ctx context.Context, msgs []queue.LogMessage, nowMs int64) (queue.IngestResult, error) {
	res, cs, err := s.Live.IngestStep(ctx, msgs, nowMs)
	if err != nil {
		return res, err
	}
	s.record(ctx, nowMs, cs)
	return res, nil
}

// Tick runs the slot monitor's tick (queue.GatewayStore) and records its
// changes, with the admissions and releases left unrecorded past the
// store's grace; a result's Admitted lists the tick's own admissions now
// recorded (and told).
func (s *Store) Tick(ctx context.Context, req queue.TickRequest) ([]queue.TickResult, error) {
	out, cs, err := s.Live.TickStep(ctx, req)
	if err != nil {
		return nil, err
	}
	recorded, _ := s.record(ctx, req.NowMs, cs)
	for i := range out {
		out[i].Admitted = nil
		for _, u := range recorded[out[i].EventID] {
			if slices.Contains(cs[i].Fresh, u) {
				out[i].Admitted = append(out[i].Admitted, u)
			}
		}
	}
	return out, nil
}

// Release gives userID's slot back (queue.GatewayStore): the release is
// recorded, then its slot freed, then handed on to the next in line, whose
// admissions are recorded in turn. A release record that cannot be written
// keeps the slot counted until a monitor tick writes it.
func (s *Store) Release(ctx context.Context, eventID, userID string, nowMs int64) (bool, int, error) {
	released, ended, c, err := s.Live.ReleaseStep(ctx, eventID, userID, nowMs)
	if err != nil {
		return false, 0, err
	}
	if _, free := s.record(ctx, nowMs, []queue.Changes{c}); free[eventID] {
		more, next, err := s.Live.HandOn(ctx, eventID, nowMs)
		if err != nil {
			s.logger.Warn("handing a released slot on failed; a monitor tick admits the next", "event", eventID, "err", err)
		} else {
			s.record(ctx, nowMs, []queue.Changes{next})
			ended += more
		}
	}
	return released, ended, nil
}

// PutEvent stores e's configuration (queue.EventStore), then records it as
// stored (with the seed that stayed) in a config record carrying its stamp
// (config.configuredAt): a rebuild attaches the line to it.
func (s *Store) PutEvent(ctx context.Context, e queue.Event) (bool, error) {
	created, stamp, err := s.Live.PutEventStep(ctx, e)
	if err != nil {
		return false, err
	}
	stored, err := s.Live.Event(ctx, e.ID)
	if err != nil {
		return false, err
	}
	if err := s.log.Record(ctx, []queue.Message{queue.NewConfigRecord(stored, stamp)}); err != nil {
		return false, fmt.Errorf("recording: record the configuration of %s: %w: %w", e.ID, queue.ErrBrokerUnavailable, err)
	}
	return created, nil
}

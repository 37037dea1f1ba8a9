package gateway

import (
	"context"
	"time"

	"github.com/waitq/waitq/pkg/queue"
)

// sweepLimit bounds the users one monitor tick removes per event after the
// disconnect grace.
const sweepLimit = 1000

// MonitorTick runs one slot-monitor round now (Run calls it every
// AdmitInterval): it sweeps users gone past the disconnect grace and admits
// from every event's line, all events in one round trip. Admitted users
// connected here hear of it at once, those on other gateways at their next
// status tick.
func (s *Server) MonitorTick(ctx context.Context) {
	start := time.Now()
	defer func() { s.metrics.admitTick.Observe(time.Since(start).Seconds()) }()
	tctx, cancel := context.WithTimeout(ctx, s.cfg.AdmitInterval)
	defer cancel()
	ids, err := s.store.EventIDs(tctx)
	if err != nil {
		s.log.Warn("slot monitor: listing events failed", "err", err)
		return
	}
	now := s.now()
	res, err := s.store.Tick(tctx, queue.TickRequest{
		EventIDs: ids, NowMs: now.UnixMilli(), AdmitBatch: s.cfg.AdmitBatch,
		PresenceCutoffMs: now.Add(-s.cfg.DisconnectGrace).UnixMilli(), SweepLimit: sweepLimit,
	})
	if err != nil {
		s.log.Warn("slot monitor: tick failed", "events", len(ids), "err", err)
		return
	}
	s.metrics.holders.Reset()
	s.metrics.waiting.Reset()
	for _, r := range res {
		if !r.Unknown {
			s.metrics.holders.WithLabelValues(r.EventID).Set(float64(r.Holders))
			s.metrics.waiting.WithLabelValues(r.EventID).Set(float64(r.Waiting))
		}
		s.metrics.admitted.Add(float64(len(r.Admitted)))
		s.metrics.swept.Add(float64(len(r.Swept)))
		if len(r.Swept) > 0 {
			s.log.Info("removed users gone past the disconnect grace", "event", r.EventID, "users", len(r.Swept))
		}
		for _, u := range r.Admitted {
			for _, c := range s.hub.user(r.EventID, u) {
				s.admit(c, r.ExpiresAt)
			}
		}
	}
}

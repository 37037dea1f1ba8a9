package gateway

import (
	"context"
	"time"

	"github.com/waitq/waitq/internal/queue"
)

// sweepLimit bounds the users one monitor tick removes per event after the
// disconnect grace.
const sweepLimit = 1000

// gatewaySilence is how long a gateway may go without reading an event's
// line before the presences it holds there are let go (sweep.lua), at most
// half the disconnect grace: a healthy gateway reads each event's line
// every status round. The users of a gateway that died are then removed a
// grace after it went silent, unless another socket of theirs, on another
// gateway, takes the presence again meanwhile.
const gatewaySilence = 15 * time.Second

// silenceOf is gatewaySilence for a disconnect grace.
func silenceOf(grace time.Duration) time.Duration { return min(gatewaySilence, grace/2) }

// monitorLoop runs MonitorTick every AdmitInterval, once more at each
// drop opening it knows of (openings), and at once when a called user came
// back (claims), until ctx ends.
func (s *Server) monitorLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.AdmitInterval)
	defer t.Stop()
	opening := time.NewTimer(time.Hour)
	opening.Stop()
	defer opening.Stop()
	s.noteOpenings(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.MonitorTick(ctx)
		case <-s.openings.changed:
			if at := s.openings.peek(); at != 0 {
				// A millisecond past the opening: the step admits from
				// opensAt on, on this gateway's clock.
				opening.Reset(time.UnixMilli(at + 1).Sub(s.now()))
			}
		case <-opening.C:
			s.openings.take()
			s.MonitorTick(ctx)
		case <-s.claims:
			s.MonitorTick(ctx)
		}
	}
}

// MonitorTick runs one slot-monitor tick now (Run calls it every
// AdmitInterval): it sweeps users gone past the disconnect grace and admits
// from every event's line, all events in one round trip. It is the safety
// net behind the fast track (joins and releases admit at once while there
// is room): expiries, sweeps, and the admissions of a paused or rate-limited
// event. Admitted users connected here are told at once, those on other
// gateways through the admissions channel (both routes: admitted.go). It
// then notes the events' drop openings to come: Run ticks once more at
// each.
func (s *Server) MonitorTick(ctx context.Context) {
	start := time.Now()
	defer func() { s.metrics.monitorTick.Observe(time.Since(start).Seconds()) }()
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
		SilentCutoffMs: now.Add(-silenceOf(s.cfg.DisconnectGrace)).UnixMilli(),
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
		s.metrics.called.Add(float64(len(r.Called)))
		s.metrics.lapsed.Add(float64(len(r.Lapsed)))
		if r.NoShows > 0 {
			s.metrics.noShows.WithLabelValues(r.EventID).Add(float64(r.NoShows))
			s.log.Info("freed the slots of admissions not arrived within the arrival window", "event", r.EventID, "users", r.NoShows)
		}
		s.holdsExpired(r.EventID, r.HoldsExpired)
		if len(r.Swept) > 0 {
			s.log.Info("removed users gone past the disconnect grace", "event", r.EventID, "users", len(r.Swept))
		}
		if r.Recovered > 0 {
			s.log.Warn("recorded admissions an admitter left unrecorded", "event", r.EventID, "users", r.Recovered)
		}
		s.notifyAdmittedUsers(r.EventID, r.Admitted, r.ExpiresAt)
	}
	s.sendMails(tctx, ids, now)
	s.sampleSeries(tctx, ids, now.UnixMilli())
	s.noteOpeningsOf(tctx, ids)
}

// sampleSeries takes the events' series samples (queue.SeriesSample) once
// per period, the first tick of each: the store keeps one per period
// whichever gateway comes first, so the others' try costs Redis one ZCOUNT
// per event. A failure is logged; the next period samples again.
func (s *Server) sampleSeries(ctx context.Context, ids []string, nowMs int64) {
	period := nowMs - nowMs%queue.SeriesPeriodMs
	if len(ids) == 0 || s.sampled.Swap(period) == period {
		return
	}
	if err := s.store.SampleSeries(ctx, ids, nowMs); err != nil {
		s.log.Warn("slot monitor: sampling the series failed", "events", len(ids), "err", err)
	}
}

package loadgen

import (
	"context"
	"fmt"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
)

// step runs one simulated second at now (elapsed since the start): the
// joins due, a monitor tick, the buyers who arrive or leave the shop, the
// polls of the open pages, and an occupancy sample.
func (s *turnsSim) step(ctx context.Context, elapsed, now int64) error {
	if err := s.joins(ctx, now); err != nil {
		return err
	}
	r, err := s.store.Tick(ctx, queue.TickRequest{EventIDs: []string{s.id}, NowMs: now, AdmitBatch: 1000,
		PresenceCutoffMs: now - turnsGrace.Milliseconds(), SweepLimit: 1000})
	if err != nil {
		return fmt.Errorf("tick: %w", err)
	}
	t := r[0]
	s.called += len(t.Called)
	s.lapsed += len(t.Lapsed)
	s.swept += len(t.Swept)
	for _, u := range append(t.Lapsed, t.Swept...) {
		s.byID[u].done = true
	}
	// An admission is told at once (the gateways' notice), not at the
	// next poll.
	for _, u := range t.Admitted {
		p := s.byID[u]
		p.admittedAt, p.stayUntil = now, t.ExpiresAt
		s.admitted++
		if p.noShow {
			s.noShows++
		}
	}
	if err := s.shop(ctx, now); err != nil {
		return err
	}
	if err := s.polls(ctx, elapsed, now); err != nil {
		return err
	}
	if t.Waiting > 0 {
		s.occupancy = append(s.occupancy, float64(s.inShop)/float64(s.cfg.capacity))
	}
	return nil
}

// joins queues the people whose join is due (toldAt holds -joinAt until
// they are told a place).
func (s *turnsSim) joins(ctx context.Context, now int64) error {
	var msgs []queue.Message
	for i, p := range s.people {
		if p.toldAt < 0 && -p.toldAt <= now {
			msgs = append(msgs, s.join(i, -p.toldAt))
			p.toldAt = 0
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	if _, err := s.store.Ingest(ctx, msgs, now); err != nil {
		return fmt.Errorf("joins: %w", err)
	}
	return nil
}

// shop lets the admitted in (a few seconds after their admission, unless
// they never come) and out (after their shopping, a release; at the end of
// their stay at the latest).
func (s *turnsSim) shop(ctx context.Context, now int64) error {
	stayMs := s.cfg.stay.Milliseconds()
	for _, p := range s.people {
		switch {
		case p.admittedAt == 0 || p.done:
		case p.noShow:
			if now >= p.admittedAt+stayMs {
				p.done = true
			}
		case !p.inShop && now >= p.admittedAt+p.arriveAfter:
			if s.cfg.arrival > 0 {
				if _, _, err := s.store.Arrive(ctx, s.id, p.id, p.stayUntil, now); err != nil {
					return fmt.Errorf("arrival: %w", err)
				}
			}
			p.inShop, p.leaveAt = true, min(now+p.shopFor, p.admittedAt+stayMs)
			s.inShop++
		case p.inShop && now >= p.leaveAt:
			if _, _, err := s.store.Release(ctx, s.id, p.id, now); err != nil {
				return fmt.Errorf("release: %w", err)
			}
			p.inShop, p.done = false, true
			s.inShop--
		}
	}
	return nil
}

// open reports whether p's page is open at now: joined, not yet in the
// shop or done, not away, not gone.
func (p *turnsPerson) open(now int64) bool {
	return p.toldAt >= 0 && p.admittedAt == 0 && !p.done &&
		!(p.awayFrom <= now && now < p.awayTo) && (p.goneAt == 0 || now < p.goneAt)
}

// polls reads the open pages due at now (each every turnsPoll, person i
// at i seconds into it), as polls, and takes in what each is told.
func (s *turnsSim) polls(ctx context.Context, elapsed, now int64) error {
	var due []string
	for i, p := range s.people {
		if p.open(now) && (int64(i)+elapsed/1000)%int64(turnsPoll/turnsStep) == 0 {
			due = append(due, p.id)
		}
	}
	if len(due) == 0 {
		return nil
	}
	b, err := s.store.Status(ctx, s.id, due, now)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	for i, f := range s.teller.Frames(&s.e, s.id, due, b, now) {
		s.told(s.byID[due[i]], f, now)
	}
	return nil
}

// told takes in the frame p's poll read at now.
func (s *turnsSim) told(p *turnsPerson, f gateway.StatusFrame, now int64) {
	back := p.awayTo > 0 && now >= p.awayTo && now < p.awayTo+turnsPoll.Milliseconds()
	switch f.State {
	case gateway.StateWaiting:
		if p.toldAt == 0 {
			p.toldAt = now
		}
		if n := len(p.etas); f.ETASeconds != nil && (n == 0 || now-p.etas[n-1].at >= turnsETAEvery.Milliseconds()) {
			p.etas = append(p.etas, turnsETA{at: now, eta: *f.ETASeconds * 1000, settled: s.admitted >= 2*s.cfg.capacity})
		}
	case gateway.StateCalled:
		if back && now < f.ClaimUntil {
			p.backInWindow = true
		}
	case gateway.StateAdmitted: // told at the tick already (step)
	case gateway.StateNoShow, gateway.StateNotQueued, gateway.StateExpired:
		// Back within the claim window and lapsed, or back within the keep
		// time (every absence here is shorter) and out of line: lost.
		if p.backInWindow || (back && f.State != gateway.StateNoShow) {
			s.lost++
		}
		p.done = true
	}
}

package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// A status round reads the connected users of each event, one slice of the
// hub at a time, with one Redis round trip per event and slice, and hands
// each conn its frame; a new conn is greeted within milliseconds, conns that
// connect together sharing one round trip. A poll
// (GET /v1/events/{eventId}/status) answers the same frame as JSON.

// greet queues a new socket for its first status, sent within milliseconds:
// sockets that connect together share one Redis round trip per event. The
// user is read from Redis, which takes their presence for this gateway
// (tracker.Fresh).
func (s *Server) greet(c *conn) {
	s.greetMu.Lock()
	s.greeting = append(s.greeting, c)
	s.greetMu.Unlock()
	select {
	case s.greetSig <- struct{}{}:
	default:
	}
}

func (s *Server) greetLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.greetSig:
		}
		time.Sleep(5 * time.Millisecond) // let a burst of connects gather
		s.greetMu.Lock()
		batch := s.greeting
		s.greeting = nil
		s.greetMu.Unlock()
		groups := map[string][]*conn{}
		users := map[string][]string{}
		for _, c := range batch {
			groups[c.eventID] = append(groups[c.eventID], c)
			users[c.eventID] = append(users[c.eventID], c.userID)
		}
		for ev, us := range users {
			s.tracker.Fresh(ev, us) // a new socket takes the presence again
		}
		s.pushAll(ctx, groups)
	}
}

// statusLoop runs a status round every StatusInterval until ctx ends.
func (s *Server) statusLoop(ctx context.Context) {
	every(ctx, s.cfg.StatusInterval, func(ctx context.Context) { s.statusRound(ctx, s.cfg.StatusSpread) })
}

// statusRound sends every conn its status, slice after slice, the slices
// spread evenly over spread (0: one after another at once, runRound), and
// starts the keep-alives that are due.
func (s *Server) statusRound(ctx context.Context, spread time.Duration) {
	runRound(ctx, spread, func(j int) {
		start := time.Now()
		// One pass over the slice: its conns by event, and the keep-alives
		// that are due (started without blocking).
		groups := map[string][]*conn{}
		now := start.UnixNano()
		s.hub.eachInSlice(j, func(c *conn) {
			groups[c.eventID] = append(groups[c.eventID], c)
			c.keepAliveDue(now, s.cfg.PingInterval, s.cfg.WriteTimeout)
		})
		s.pushAll(ctx, groups)
		s.metrics.statusRound.Observe(time.Since(start).Seconds())
	})
}

// pushAll reads each event's users in one round trip, a few events at a
// time (readEvents), and hands their frames to the write workers.
func (s *Server) pushAll(ctx context.Context, groups map[string][]*conn) {
	users := make(map[string][]string, len(groups))
	index := make(map[string]map[string]int, len(groups)) // event -> user -> place in users
	for ev, conns := range groups {
		idx := make(map[string]int, len(conns))
		us := make([]string, 0, len(conns))
		for _, c := range conns {
			if _, ok := idx[c.userID]; !ok {
				idx[c.userID] = len(us)
				us = append(us, c.userID)
			}
		}
		users[ev], index[ev] = us, idx
	}
	readEvents(ctx, s.tracker, users, s.cfg.StatusInterval, s.now, func(ev string, b queue.StatusBatch, nowMs int64, err error) {
		s.metrics.roundTrips.Inc()
		if err != nil {
			s.metrics.statusErrors.Inc()
			s.log.Warn("status read failed", "event", ev, "users", len(users[ev]), "err", err)
			return
		}
		e := s.eventOf(ctx, ev)
		s.noteOpening(e, s.now().UnixMilli())
		p := s.rates.pace(e, ev, b, nowMs)
		for _, c := range groups[ev] {
			i := index[ev][c.userID]
			s.deliver(c, e, b.Places[i], slotOf(b, i), b.Total, p, nowMs)
		}
	})
}

// pushEvent is pushAll for the conns of one event.
func (s *Server) pushEvent(ctx context.Context, ev string, conns []*conn) {
	s.pushAll(ctx, map[string][]*conn{ev: conns})
}

// deliver hands c its status frame, and its admitted frame the first time
// the user is seen holding a slot (the status round's route to
// notifyAdmitted, admitted.go). e is the event's configuration (nil:
// unknown).
func (s *Server) deliver(c *conn, e *queue.Event, p queue.Place, slotAt, total int64, pc pace, nowMs int64) {
	f := statusFrame(e, c.eventID, c.userID, p, slotAt, total, pc, nowMs, c.view(), s.cfg.PendingWindow.Milliseconds())
	if f.State == StateWaiting || f.State == StatePrequeue || f.State == StateAdmitted {
		c.placed.Store(true)
	}
	if f.State == StateAdmitted {
		s.notifyAdmitted(c, p.StayUntil)
	}
	if f.State == StateCalled {
		s.pokeClaims()
	}
	s.writers.status(c, &f)
}

// claimPokeEvery bounds the ticks pokeClaims asks for: a called user
// whose claim waits (the event full or paused) is read every status round,
// and each read would otherwise ask for a whole monitor tick again.
const claimPokeEvery = time.Second

// pokeClaims has the monitor tick at once: a called user came back (the
// status read put them in the event's claims), and the tick admits them.
// At most once per claimPokeEvery (the wall clock: a bound on work, not a
// rule of the line); the regular ticks admit what waits longer.
func (s *Server) pokeClaims() {
	now := time.Now().UnixMilli()
	if last := s.pokedAt.Load(); now-last < claimPokeEvery.Milliseconds() || !s.pokedAt.CompareAndSwap(last, now) {
		return
	}
	select {
	case s.claims <- struct{}{}:
	default:
	}
}

// eventOf returns event's configuration from the cache, or nil when it
// cannot be read: the frames then say nothing of a schedule.
func (s *Server) eventOf(ctx context.Context, event string) *queue.Event {
	e, err := s.events.Event(ctx, event)
	if err != nil {
		return nil
	}
	return &e
}

// statusFrame is the one place a status frame is made, for sockets and
// polls: the state and position of p, and for a drop the pre-queue's
// countdown or the drawn place. e may be nil (configuration unknown).
func statusFrame(e *queue.Event, eventID, userID string, p queue.Place, slotAt, total int64, pc pace, nowMs int64, v socketView, pendingMs int64) StatusFrame {
	st, pos := placeState(p, nowMs, v, pendingMs)
	f := StatusFrame{
		Type: "status", EventID: eventID, UserID: userID, State: st, Position: pos,
		Total: total, TS: nowMs, DrawnPlace: p.Drawn,
	}
	if st == StateCalled {
		f.ClaimUntil = p.Turn
	}
	f.ETASeconds, f.ETAMaxSeconds = estimate(pos, pc, slotAt, nowMs)
	if st == StatePrequeue && e != nil && e.OpensAt > nowMs {
		f.OpensAt = e.OpensAt
		f.OpensInSeconds = max(1, (e.OpensAt-nowMs+999)/1000)
	}
	return f
}

// pollStatus answers GET /v1/events/{eventId}/status with the status frame's
// JSON, for clients that poll; it keeps a waiting user's presence like a
// socket does.
func (s *Server) pollStatus(c echo.Context) error {
	id, err := s.resolve(c.Request(), c.Param("eventId"))
	if err != nil {
		return err
	}
	nowMs := s.now().UnixMilli()
	b, err := s.store.Status(c.Request().Context(), id.eventID, []string{id.userID}, nowMs)
	if err != nil {
		return httpkit.StoreError(s.log, "status of "+id.eventID, err)
	}
	e := s.eventOf(c.Request().Context(), id.eventID)
	s.noteOpening(e, s.now().UnixMilli())
	pc := s.rates.pace(e, id.eventID, b, nowMs)
	f := statusFrame(e, id.eventID, id.userID, b.Places[0], slotOf(b, 0), b.Total, pc, nowMs,
		socketView{joinedAtMs: id.joinedAtMs}, s.cfg.PendingWindow.Milliseconds())
	if f.State == StateCalled {
		s.pokeClaims()
	}
	return c.JSON(http.StatusOK, f)
}

// slotOf is b's SlotAt of the i-th user (0 when the store gave none).
func slotOf(b queue.StatusBatch, i int) int64 {
	if i < len(b.SlotAt) {
		return b.SlotAt[i]
	}
	return 0
}

package gateway

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/pkg/entry"
	"github.com/waitq/waitq/pkg/httpkit"
	"github.com/waitq/waitq/pkg/queue"
)

// A status tick reads every connected user of an event with one pipelined
// Redis round trip and queues each socket its frame; a new socket is greeted
// within milliseconds, sockets that connect together sharing one round trip.
// A poll (GET /v1/events/{eventId}/status) answers the same frame as JSON.

// greet queues a new socket for its first status, sent within milliseconds:
// sockets that connect together share one Redis round trip per event.
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
		for _, c := range batch {
			groups[c.eventID] = append(groups[c.eventID], c)
		}
		s.pushAll(ctx, groups)
	}
}

// statusTick sends every socket its status.
func (s *Server) statusTick(ctx context.Context) {
	start := time.Now()
	s.pushAll(ctx, s.hub.byEvent())
	s.metrics.statusTick.Observe(time.Since(start).Seconds())
}

// pushAll reads each event's users in one round trip, a few events at a
// time, and queues their frames.
func (s *Server) pushAll(ctx context.Context, groups map[string][]*conn) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for ev, conns := range groups {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s.pushEvent(ctx, ev, conns)
		})
	}
	wg.Wait()
}

func (s *Server) pushEvent(ctx context.Context, ev string, conns []*conn) {
	index := make(map[string]int, len(conns))
	users := make([]string, 0, len(conns))
	for _, c := range conns {
		if _, ok := index[c.userID]; !ok {
			index[c.userID] = len(users)
			users = append(users, c.userID)
		}
	}
	nowMs := s.now().UnixMilli()
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StatusInterval)
	b, err := s.store.Status(rctx, ev, users, nowMs)
	cancel()
	s.metrics.roundTrips.Inc()
	if err != nil {
		s.metrics.statusErrors.Inc()
		s.log.Warn("status read failed", "event", ev, "users", len(users), "err", err)
		return
	}
	perSecond := s.admissionRate(ctx, ev, b.AdmittedTotal, nowMs)
	for _, c := range conns {
		s.deliver(c, b.Places[index[c.userID]], b.Total, perSecond, nowMs)
	}
}

// deliver queues c's status frame, and its admitted frame the first time the
// user is seen holding a slot.
func (s *Server) deliver(c *conn, p queue.Place, total int64, perSecond float64, nowMs int64) {
	st, pos := placeState(p, nowMs, c.view(), s.cfg.PendingWindow.Milliseconds())
	if st == StateWaiting || st == StateAdmitted {
		c.placed.Store(true)
	}
	if st == StateAdmitted {
		s.admit(c, p.HoldUntil)
	}
	if c.send(appendStatus(&StatusFrame{
		Type: "status", EventID: c.eventID, UserID: c.userID, State: st, Position: pos,
		Total: total, ETASeconds: etaSeconds(pos, perSecond), TS: nowMs,
	})) {
		s.metrics.frames.Inc()
	}
}

// admit sends c its admitted frame with a signed entry token, once.
func (s *Server) admit(c *conn, expiresAt int64) {
	if !c.admitted.CompareAndSwap(false, true) {
		return
	}
	token := s.entry.Sign(entry.Token{EventID: c.eventID, UserID: c.userID, Expires: expiresAt, IssuedAt: s.now().UnixMilli()})
	if c.send(encode(AdmittedFrame{Type: "admitted", EventID: c.eventID, UserID: c.userID, EntryToken: token, ExpiresAt: expiresAt})) {
		s.metrics.frames.Inc()
	}
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
	st, pos := placeState(b.Places[0], nowMs, socketView{joinedAtMs: id.joinedAtMs}, s.cfg.PendingWindow.Milliseconds())
	return c.JSON(http.StatusOK, StatusFrame{
		Type: "status", EventID: id.eventID, UserID: id.userID, State: st, Position: pos, Total: b.Total,
		ETASeconds: etaSeconds(pos, s.admissionRate(c.Request().Context(), id.eventID, b.AdmittedTotal, nowMs)), TS: nowMs,
	})
}

// admissionRate is the rate the ETA assumes for event: the measured one
// (from admittedTotal), never above the event's admitPerMinute, and that
// ceiling itself while nothing has been measured yet.
func (s *Server) admissionRate(ctx context.Context, event string, admittedTotal, nowMs int64) float64 {
	measured := s.rates.observe(event, admittedTotal, nowMs)
	e, err := s.events.Event(ctx, event)
	if err != nil || e.AdmitPerMinute <= 0 {
		return measured
	}
	ceiling := float64(e.AdmitPerMinute) / 60
	if measured <= 0 || measured > ceiling {
		return ceiling
	}
	return measured
}

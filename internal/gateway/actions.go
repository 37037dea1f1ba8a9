package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/entry"
)

// What a client asks of its place: leave the line or release a held slot,
// over WebSocket ({"type":"leave"}, {"type":"release"}) or, for the
// protected service, POST /v1/events/{eventId}/release with the entry token.

// actionTimeout bounds one leave or release asked over WebSocket.
const actionTimeout = 5 * time.Second

// leave publishes the user's leave through the join topic, so it cannot
// overtake the join.
func (s *Server) leave(ctx context.Context, c *conn) error {
	ctx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	m := queue.NewMessage(queue.OpLeave, c.eventID, c.userID, s.now().UnixMilli())
	if err := s.pub.Publish(ctx, m); err != nil {
		s.log.Warn("publishing a leave failed", "event", c.eventID, "err", err)
		return queue.Errorf(queue.CodeBrokerUnavailable, "the leave could not be recorded; try again")
	}
	c.placed.Store(true) // from now on, absent from Redis means gone, not pending
	return nil
}

// release gives the user's slot back and sends the new status at once.
func (s *Server) release(ctx context.Context, c *conn) error {
	ctx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	_, ended, err := s.store.Release(ctx, c.eventID, c.userID, s.now().UnixMilli())
	if err != nil {
		return httpkit.StoreError(s.log, "release in "+c.eventID, err)
	}
	s.holdsExpired(c.eventID, ended)
	s.pushEvent(ctx, c.eventID, []*conn{c})
	return nil
}

// TokenBody is the body of release and verify: {"token":"…"}.
type TokenBody struct {
	Token string `json:"token"`
}

// ReleaseResponse says whether a held slot was given back.
type ReleaseResponse struct {
	Released bool `json:"released"`
}

// releaseHTTP lets the protected service give a slot back with the user's
// entry token. Releasing twice frees one slot.
func (s *Server) releaseHTTP(c echo.Context) error {
	ev := c.Param("eventId")
	if err := queue.CheckEventID(ev); err != nil {
		return err
	}
	var body TokenBody
	if err := httpkit.DecodeJSON(c.Request().Body, &body, queue.CodeInvalidBody, `{"token":"<entry token>"}`); err != nil {
		return err
	}
	t, err := s.entry.Verify(body.Token, ev, s.now())
	if t.Legacy {
		s.metrics.legacyTokens.WithLabelValues("release").Inc()
	}
	if err != nil {
		return queue.Errorf(queue.CodeInvalidTicket, "%v", err)
	}
	ok, ended, err := s.store.Release(c.Request().Context(), ev, t.UserID, s.now().UnixMilli())
	if err != nil {
		return httpkit.StoreError(s.log, "release in "+ev, err)
	}
	s.holdsExpired(ev, ended)
	return c.JSON(http.StatusOK, ReleaseResponse{Released: ok})
}

// ReleasedAdmission is one released admission whose token has not expired:
// its jti and its exp (unix seconds, as in the token).
type ReleasedAdmission struct {
	JTI string `json:"jti"`
	Exp int64  `json:"exp"`
}

// ReleasedResponse lists an event's released admissions whose tokens still
// verify offline: the refusal list the guards poll.
type ReleasedResponse struct {
	EventID  string              `json:"eventId"`
	Released []ReleasedAdmission `json:"released"`
}

// released serves the refusal list of an event (ReleasedResponse): every
// admission released before its stay ended, until it ends. An unknown event
// has none.
func (s *Server) released(c echo.Context) error {
	ev := c.Param("eventId")
	if err := queue.CheckEventID(ev); err != nil {
		return err
	}
	l, err := s.store.Released(c.Request().Context(), ev, s.now().UnixMilli())
	if err != nil {
		return httpkit.StoreError(s.log, "released of "+ev, err)
	}
	out := ReleasedResponse{EventID: ev, Released: make([]ReleasedAdmission, len(l))}
	for i, a := range l {
		out.Released[i] = ReleasedAdmission{JTI: entry.AdmissionID(ev, a.UserID, a.StayUntil), Exp: (a.StayUntil + 999) / 1000}
	}
	return c.JSON(http.StatusOK, out)
}

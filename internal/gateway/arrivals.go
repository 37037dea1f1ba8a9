package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// Arrivals: POST /v1/events/{eventId}/arrivals, the reporters' (waitq-guard,
// pkg/entry's Guard, a forward-auth endpoint) word that an admitted person's
// first request reached the shop, so that their slot is not freed as a
// no-show's (docs/api.md, arrivals). Only a reporter holding the event's
// report token may say so: a forged arrival would keep a no-show's slot.

// ArrivalResponse says the arrival of the token's admission is marked.
type ArrivalResponse struct {
	Arrived bool `json:"arrived"`
}

// arrive marks the arrival of the entry token's admission: the event's
// report token as the bearer, a valid token of the event, and the
// admission the user's current one (else 409 not_admitted, nothing
// marked).
func (s *Server) arrive(c echo.Context) error {
	ev := c.Param("eventId")
	if err := queue.CheckEventID(ev); err != nil {
		return err
	}
	if err := s.reporter(c, ev); err != nil {
		return err
	}
	var body TokenBody
	if err := httpkit.DecodeJSON(c.Request().Body, &body, queue.CodeInvalidBody, `{"token":"<entry token>"}`); err != nil {
		return err
	}
	now := s.now()
	t, err := s.entry.Verify(body.Token, ev, now)
	if err != nil {
		return queue.Errorf(queue.CodeInvalidTicket, "%v", err)
	}
	arrived, first, err := s.store.Arrive(c.Request().Context(), ev, t.UserID, t.Expires, now.UnixMilli())
	if err != nil {
		return httpkit.StoreError(s.log, "arrival in "+ev, err)
	}
	if !arrived {
		return queue.Errorf(queue.CodeNotAdmitted, "the token's admission is not the user's current one (released, ended or freed as a no-show's)")
	}
	if first {
		s.metrics.arrivals.WithLabelValues(ev).Inc()
	}
	return c.JSON(http.StatusOK, ArrivalResponse{Arrived: true})
}

// reporter checks an arrival's credential: the event's report token as the
// bearer, compared in constant time. An unknown event is refused as a bad
// credential is, so the route tells nobody which events exist.
func (s *Server) reporter(c echo.Context, ev string) error {
	e, err := s.events.Event(c.Request().Context(), ev)
	if err != nil && !errors.Is(err, queue.ErrEventNotFound) {
		return httpkit.StoreError(s.log, "event "+ev, err)
	}
	got, want := sha256.Sum256([]byte(bearer(c))), sha256.Sum256([]byte(e.ReportToken))
	if err != nil || e.ReportToken == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return queue.Errorf(queue.CodeUnauthorized, "an arrival needs event %s's report token (Authorization: Bearer <reportToken>)", ev)
	}
	return nil
}

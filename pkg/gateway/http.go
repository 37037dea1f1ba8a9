package gateway

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/pkg/api"
	"github.com/waitq/waitq/pkg/entry"
	"github.com/waitq/waitq/pkg/queue"
)

// pollStatus answers GET /v1/events/{eventId}/status with the status frame's
// JSON, for clients that poll; it keeps a waiting user's presence like a
// socket does.
func (s *Server) pollStatus(c echo.Context) error {
	ev := c.Param("eventId")
	if !queue.ValidEventID(ev) {
		return queue.Errorf(queue.CodeInvalidEventID, "event id must be 1-%d characters of [A-Za-z0-9_-]", queue.MaxEventIDLen)
	}
	user, joinedAt, err := s.identify(c.Request(), ev)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.events.Event(ctx, ev); errors.Is(err, queue.ErrEventNotFound) {
		return queue.Errorf(queue.CodeEventNotFound, "event %s does not exist", ev)
	} else if err != nil {
		return queue.Errorf(queue.CodeStoreUnavailable, "the event store is not reachable; try again")
	}
	nowMs := s.now().UnixMilli()
	b, err := s.store.Status(ctx, ev, []string{user}, nowMs)
	if err != nil {
		return queue.Errorf(queue.CodeStoreUnavailable, "the event store is not reachable; try again")
	}
	st, pos := placeState(b.Places[0], nowMs, history{joinedAtMs: joinedAt}, s.cfg.PendingWindow.Milliseconds())
	return c.JSON(http.StatusOK, StatusFrame{
		Type: "status", EventID: ev, UserID: user, State: st, Position: pos, Total: b.Total,
		ETASeconds: etaSeconds(pos, s.rates.observe(ev, b.AdmittedTotal, nowMs)), TS: nowMs,
	})
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
	if !queue.ValidEventID(ev) {
		return queue.Errorf(queue.CodeInvalidEventID, "event id must be 1-%d characters of [A-Za-z0-9_-]", queue.MaxEventIDLen)
	}
	var body TokenBody
	if err := api.DecodeJSON(c.Request().Body, &body, queue.CodeInvalidBody, `{"token":"<entry token>"}`); err != nil {
		return err
	}
	t, err := s.entry.Verify(body.Token, ev, s.now())
	if err != nil {
		return queue.Errorf(queue.CodeInvalidTicket, "%v", err)
	}
	ok, err := s.store.Release(c.Request().Context(), ev, t.UserID, s.now().UnixMilli())
	if err != nil {
		return queue.Errorf(queue.CodeStoreUnavailable, "the event store is not reachable; try again")
	}
	return c.JSON(http.StatusOK, ReleaseResponse{Released: ok})
}

// VerifyResponse is the answer of POST /v1/entry/verify.
type VerifyResponse struct {
	Valid     bool   `json:"valid"`
	State     string `json:"state"` // admitted, waiting, expired or invalid
	EventID   string `json:"eventId,omitempty"`
	UserID    string `json:"userId,omitempty"`
	ExpiresAt int64  `json:"expiresAt,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// verifyEntry is seed 002's check at the moment of ordering: a token is
// valid only while its user still holds the slot.
func (s *Server) verifyEntry(c echo.Context) error {
	var body TokenBody
	if err := api.DecodeJSON(c.Request().Body, &body, queue.CodeInvalidBody, `{"token":"<entry token>"}`); err != nil {
		return err
	}
	now := s.now()
	t, err := s.entry.Verify(body.Token, "", now)
	switch {
	case errors.Is(err, entry.ErrExpired):
		return c.JSON(http.StatusOK, VerifyResponse{State: "expired", EventID: t.EventID, UserID: t.UserID, ExpiresAt: t.Expires, Reason: err.Error()})
	case err != nil:
		return c.JSON(http.StatusOK, VerifyResponse{State: "invalid", Reason: err.Error()})
	}
	b, err := s.store.Status(c.Request().Context(), t.EventID, []string{t.UserID}, now.UnixMilli())
	if err != nil {
		return queue.Errorf(queue.CodeStoreUnavailable, "the event store is not reachable; try again")
	}
	r := VerifyResponse{EventID: t.EventID, UserID: t.UserID, ExpiresAt: t.Expires}
	switch p := b.Places[0]; {
	case p.HoldUntil > now.UnixMilli():
		r.Valid, r.State, r.ExpiresAt = true, "admitted", p.HoldUntil
	case p.Rank >= 0:
		r.State = "waiting"
	default:
		r.State, r.Reason = "expired", "the slot was released or its hold ended"
	}
	return c.JSON(http.StatusOK, r)
}

// jwks serves the public keys entry tokens are verified with, for protected
// services that verify offline (package entry).
func (s *Server) jwks(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.Blob(http.StatusOK, "application/jwk-set+json", s.entry.JWKS())
}

package gateway

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/entry"
)

// Entry tokens at the protected service: POST /v1/entry/verify checks one
// against the live state, /.well-known/jwks.json serves the keys that verify
// them offline (package entry).

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
	if err := httpkit.DecodeJSON(c.Request().Body, &body, queue.CodeInvalidBody, `{"token":"<entry token>"}`); err != nil {
		return err
	}
	now := s.now()
	t, err := s.entry.Verify(body.Token, "", now)
	if t.Legacy {
		s.metrics.legacyTokens.WithLabelValues("verify").Inc()
	}
	switch {
	case errors.Is(err, entry.ErrExpired):
		return c.JSON(http.StatusOK, VerifyResponse{State: "expired", EventID: t.EventID, UserID: t.UserID, ExpiresAt: t.Expires, Reason: err.Error()})
	case err != nil:
		return c.JSON(http.StatusOK, VerifyResponse{State: "invalid", Reason: err.Error()})
	}
	b, err := s.store.Status(c.Request().Context(), t.EventID, []string{t.UserID}, now.UnixMilli())
	if err != nil {
		return httpkit.StoreError(s.log, "status of "+t.EventID, err)
	}
	r := VerifyResponse{EventID: t.EventID, UserID: t.UserID, ExpiresAt: t.Expires}
	switch p := b.Places[0]; {
	case p.StayUntil > now.UnixMilli():
		r.Valid, r.State, r.ExpiresAt = true, "admitted", p.StayUntil
	case p.InLine():
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

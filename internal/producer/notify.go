package producer

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// NotifyBody is the body of PUT /v1/events/{eventId}/notify: the address
// to mail when the caller's turn comes (docs/api.md, "Being called").
type NotifyBody struct {
	Email string `json:"email"`
}

// notify keeps the address the caller (identified as a join is) leaves to
// be called by mail: they must wait or be called. The address is checked
// (queue.CheckAddress), never logged nor answered back; every refusal
// changes nothing.
func (s *Server) notify(c echo.Context) error {
	ev, id, err := s.queueRequest(c)
	if err != nil {
		return err
	}
	var body NotifyBody
	if err := httpkit.DecodeJSON(c.Request().Body, &body, queue.CodeInvalidBody, `{"email":"…"}`); err != nil {
		return err
	}
	if err := queue.CheckAddress(body.Email); err != nil {
		return err
	}
	if err := s.addresses.SetAddress(c.Request().Context(), ev.ID, id.user, body.Email); err != nil {
		return addressError(s, ev.ID, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// unnotify forgets the caller's address, whether or not there was one.
func (s *Server) unnotify(c echo.Context) error {
	ev, id, err := s.queueRequest(c)
	if err != nil {
		return err
	}
	if _, err := s.addresses.RemoveAddress(c.Request().Context(), ev.ID, id.user); err != nil {
		return httpkit.StoreError(s.log, "remove an address of "+ev.ID, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// addressError is the answer to a store's refusal of an address: its own
// domain error, or store_unavailable.
func addressError(s *Server, ev string, err error) error {
	var e *queue.Error
	if errors.As(err, &e) {
		return err
	}
	return httpkit.StoreError(s.log, "keep an address of "+ev, err)
}

package gateway

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// Seat holds for admitted buyers (queue.HoldStore): the protected shop
// holds, releases and confirms items with the buyer's entry token, which
// the gateway verifies as it does for release.
//
//	POST   /v1/events/{eventId}/holds                {"token","item"}
//	DELETE /v1/events/{eventId}/holds/{item}         Authorization: Bearer <entry token>
//	POST   /v1/events/{eventId}/holds/{item}/confirm {"token"}
//	GET    /v1/events/{eventId}/holds                the seat map: items held or sold

// HoldBody is the body of POST /v1/events/{eventId}/holds.
type HoldBody struct {
	Token string `json:"token"`
	Item  string `json:"item"`
}

// ItemsResponse is the seat map: items held or sold (absent: free).
type ItemsResponse struct {
	EventID string                     `json:"eventId"`
	Items   map[string]queue.ItemState `json:"items"`
}

// holdMetrics count the holds by event.
type holdMetrics struct {
	taken, released, expired, sold *prometheus.CounterVec
	refused                        *prometheus.CounterVec
}

func newHoldMetrics(reg prometheus.Registerer) *holdMetrics {
	vec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{"event"}, labels...))
	}
	m := &holdMetrics{
		taken:    vec("waitq_holds_taken_total", "Item holds taken (201), by event."),
		refused:  vec("waitq_holds_refused_total", "Item holds refused, by event and reason (the error code).", "reason"),
		released: vec("waitq_holds_released_total", "Item holds given back by their holder (DELETE), by event."),
		expired:  vec("waitq_holds_expired_total", "Item holds found ended with their holder's slot and taken by another buyer, by event."),
		sold:     vec("waitq_items_sold_total", "Items sold (confirmed), by event."),
	}
	reg.MustRegister(m.taken, m.refused, m.released, m.expired, m.sold)
	return m
}

// holdRoutes adds the hold routes to e.
func (s *Server) holdRoutes(e *echo.Echo, limit echo.MiddlewareFunc) {
	e.POST("/v1/events/:eventId/holds", s.hold)
	e.GET("/v1/events/:eventId/holds", s.items, limit)
	e.DELETE("/v1/events/:eventId/holds/:item", s.unhold)
	e.POST("/v1/events/:eventId/holds/:item/confirm", s.confirm)
}

// buyer checks the event id, the item id and the entry token of a hold
// route, and returns the token's user.
func (s *Server) buyer(ev, item, token string) (string, error) {
	if err := queue.CheckEventID(ev); err != nil {
		return "", err
	}
	if err := queue.CheckItemID(item); err != nil {
		return "", err
	}
	t, err := s.entry.Verify(token, ev, s.now())
	if err != nil {
		return "", queue.Errorf(queue.CodeInvalidTicket, "%v", err)
	}
	return t.UserID, nil
}

// holdError returns a domain refusal as it is, and any other store failure
// as store_unavailable (logged).
func (s *Server) holdError(what string, err error) error {
	var e *queue.Error
	if errors.As(err, &e) {
		return e
	}
	return httpkit.StoreError(s.log, what, err)
}

func (s *Server) hold(c echo.Context) error {
	ev := c.Param("eventId")
	var body HoldBody
	if err := httpkit.DecodeJSON(c.Request().Body, &body, queue.CodeInvalidBody, `{"token":"<entry token>","item":"<item id>"}`); err != nil {
		return err
	}
	user, err := s.buyer(ev, body.Item, body.Token)
	if err != nil {
		if queue.ValidEventID(ev) {
			s.holds.refused.WithLabelValues(ev, string(queue.ErrorCode(err))).Inc()
		}
		return err
	}
	r, err := s.store.Hold(c.Request().Context(), ev, user, body.Item, s.now().UnixMilli())
	if err != nil {
		if code := queue.ErrorCode(err); code != queue.CodeInternal && code != queue.CodeEventNotFound {
			s.holds.refused.WithLabelValues(ev, string(code)).Inc()
		}
		return s.holdError("hold in "+ev, err)
	}
	if !r.Created {
		return c.JSON(http.StatusOK, r.Hold)
	}
	s.holds.taken.WithLabelValues(ev).Inc()
	if r.Replaced {
		s.holds.expired.WithLabelValues(ev).Inc()
	}
	return c.JSON(http.StatusCreated, r.Hold)
}

func (s *Server) unhold(c echo.Context) error {
	ev, item := c.Param("eventId"), c.Param("item")
	token, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
	if !ok {
		token = ""
	}
	user, err := s.buyer(ev, item, token)
	if err != nil {
		return err
	}
	live, err := s.store.Unhold(c.Request().Context(), ev, user, item, s.now().UnixMilli())
	if err != nil {
		return s.holdError("unhold in "+ev, err)
	}
	if live {
		s.holds.released.WithLabelValues(ev).Inc()
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) confirm(c echo.Context) error {
	ev, item := c.Param("eventId"), c.Param("item")
	var body TokenBody
	if err := httpkit.DecodeJSON(c.Request().Body, &body, queue.CodeInvalidBody, `{"token":"<entry token>"}`); err != nil {
		return err
	}
	user, err := s.buyer(ev, item, body.Token)
	if err != nil {
		return err
	}
	sale, fresh, err := s.store.Confirm(c.Request().Context(), ev, user, item, s.now().UnixMilli())
	if err != nil {
		return s.holdError("confirm in "+ev, err)
	}
	if fresh {
		s.holds.sold.WithLabelValues(ev).Inc()
	}
	return c.JSON(http.StatusOK, sale)
}

func (s *Server) items(c echo.Context) error {
	ev := c.Param("eventId")
	if err := queue.CheckEventID(ev); err != nil {
		return err
	}
	if _, err := s.events.Event(c.Request().Context(), ev); err != nil {
		return s.holdError("event "+ev, err)
	}
	items, err := s.store.Items(c.Request().Context(), ev, s.now().UnixMilli())
	if err != nil {
		return httpkit.StoreError(s.log, "items of "+ev, err)
	}
	return c.JSON(http.StatusOK, ItemsResponse{EventID: ev, Items: items})
}

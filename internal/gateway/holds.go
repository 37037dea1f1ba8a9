package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// Seat holds for admitted buyers (queue.HoldStore): the protected shop
// holds and releases items with the buyer's entry token, which the gateway
// verifies as it does for release; a sale, and its undo, take the shop's
// own credential too (the event's shopToken), which buyers never hold.
//
//	POST   /v1/events/{eventId}/holds                {"token","item"}
//	DELETE /v1/events/{eventId}/holds/{item}         Authorization: Bearer <entry token>
//	POST   /v1/events/{eventId}/holds/{item}/confirm {"token"}, Authorization: Bearer <shop token>
//	DELETE /v1/events/{eventId}/holds/{item}/sale    Authorization: Bearer <shop token>
//	GET    /v1/events/{eventId}/holds                the seat map: items held or sold
//	GET    /v1/events/{eventId}/holds/{item}         one item: held until when, free or sold
//
// ws-gateway knows no admin token: GET of one item shows the buyer's (or
// buyer's) user id only to a request bearing that user's own entry token.

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
	taken, released, expired, sold, unsold *prometheus.CounterVec
	refused                                *prometheus.CounterVec
}

func newHoldMetrics(reg prometheus.Registerer) *holdMetrics {
	vec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{"event"}, labels...))
	}
	m := &holdMetrics{
		taken:    vec("waitq_holds_taken_total", "Item holds taken (201), by event."),
		refused:  vec("waitq_holds_refused_total", "Item holds refused, by event and reason (the error code).", "reason"),
		released: vec("waitq_holds_released_total", "Item holds given back by their buyer (DELETE), by event."),
		expired:  vec("waitq_holds_expired_total", "Item holds that ended unconfirmed and not given back because their buyer's slot ended (released or expired), by event."),
		sold:     vec("waitq_items_sold_total", "Items sold (confirmed), by event."),
		unsold:   vec("waitq_items_unsold_total", "Sales undone by the shop (DELETE …/sale), by event."),
	}
	reg.MustRegister(m.taken, m.refused, m.released, m.expired, m.sold, m.unsold)
	return m
}

// holdRoutes adds the hold routes to e: the reads under the status polls'
// limit, the buyer's hold and give-back under the buyer's (HoldLimit).
func (s *Server) holdRoutes(e *echo.Echo, limit, buyerLimit echo.MiddlewareFunc) {
	e.POST("/v1/events/:eventId/holds", s.hold, buyerLimit)
	e.GET("/v1/events/:eventId/holds", s.items, limit)
	e.GET("/v1/events/:eventId/holds/:item", s.item, limit)
	e.DELETE("/v1/events/:eventId/holds/:item", s.unhold, buyerLimit)
	e.POST("/v1/events/:eventId/holds/:item/confirm", s.confirm)
	e.DELETE("/v1/events/:eventId/holds/:item/sale", s.unsell)
}

// shop checks a sale route's credential: the event's shop token as the
// bearer, compared in constant time. An event without one (created before
// shop tokens, not updated since) takes no sale.
func (s *Server) shop(ctx context.Context, c echo.Context, ev string) error {
	e, err := s.events.Event(ctx, ev)
	if err != nil {
		return s.holdError("event "+ev, err)
	}
	got, want := sha256.Sum256([]byte(bearer(c))), sha256.Sum256([]byte(e.ShopToken))
	if e.ShopToken == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return queue.Errorf(queue.CodeUnauthorized, "a sale needs event %s's shop token (Authorization: Bearer <shopToken>)", ev)
	}
	return nil
}

// buyer checks the event id, the event (it must exist: nothing is counted
// or kept for a made-up id), the item id and the entry token of a hold
// route, and returns the token's user.
func (s *Server) buyer(ctx context.Context, ev, item, token string) (string, error) {
	if err := queue.CheckEventID(ev); err != nil {
		return "", err
	}
	if _, err := s.events.Event(ctx, ev); err != nil {
		return "", s.holdError("event "+ev, err)
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

// itemParams returns the route's event and item ids, each checked.
func itemParams(c echo.Context) (ev, item string, err error) {
	ev, item = c.Param("eventId"), c.Param("item")
	if err := queue.CheckEventID(ev); err != nil {
		return "", "", err
	}
	if err := queue.CheckItemID(item); err != nil {
		return "", "", err
	}
	return ev, item, nil
}

// bearer returns the request's bearer token ("" for none).
func bearer(c echo.Context) string {
	token, _ := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
	return token
}

// holdsExpired counts n holds of ev that ended with their buyer's slot,
// unconfirmed and not given back: deleted by a release or by the admission
// step that expired the buyer (Release, Tick), or found ended and replaced
// by a hold (HoldResult.Replaced).
func (s *Server) holdsExpired(ev string, n int) {
	if n > 0 {
		s.holds.expired.WithLabelValues(ev).Add(float64(n))
	}
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
	user, err := s.buyer(c.Request().Context(), ev, body.Item, body.Token)
	if err != nil {
		// Counted only for an event that exists: a made-up id adds no series.
		if code := queue.ErrorCode(err); code == queue.CodeInvalidItem || code == queue.CodeInvalidTicket {
			s.holds.refused.WithLabelValues(ev, string(code)).Inc()
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
		s.holdsExpired(ev, 1)
	}
	return c.JSON(http.StatusCreated, r.Hold)
}

func (s *Server) unhold(c echo.Context) error {
	ev, item := c.Param("eventId"), c.Param("item")
	user, err := s.buyer(c.Request().Context(), ev, item, bearer(c))
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
	if err := queue.CheckEventID(ev); err != nil {
		return err
	}
	if err := s.shop(c.Request().Context(), c, ev); err != nil {
		return err
	}
	var body TokenBody
	if err := httpkit.DecodeJSON(c.Request().Body, &body, queue.CodeInvalidBody, `{"token":"<entry token>"}`); err != nil {
		return err
	}
	user, err := s.buyer(c.Request().Context(), ev, item, body.Token)
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

// unsell undoes a sale: the shop's (a payment that failed after all) or an
// operator's, with the shop token. 200 and the sale undone; 204 when the
// item was not sold.
func (s *Server) unsell(c echo.Context) error {
	ev, item, err := itemParams(c)
	if err != nil {
		return err
	}
	if err := s.shop(c.Request().Context(), c, ev); err != nil {
		return err
	}
	sale, ok, err := s.store.Unsell(c.Request().Context(), ev, item, s.now().UnixMilli())
	if err != nil {
		return s.holdError("unsell in "+ev, err)
	}
	if !ok {
		return c.NoContent(http.StatusNoContent)
	}
	s.holds.unsold.WithLabelValues(ev).Inc()
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

// item answers the state of one item (queue.ItemHold): held (until when),
// sold or free. The user id is shown only when the request bears an entry
// token of the event that verifies and whose user is the buyer (holding the item or having bought it).
func (s *Server) item(c echo.Context) error {
	ev, item, err := itemParams(c)
	if err != nil {
		return err
	}
	h, err := s.store.Item(c.Request().Context(), ev, item, s.now().UnixMilli())
	if err != nil {
		return s.holdError("item "+item+" of "+ev, err)
	}
	if h.UserID != "" {
		if t, err := s.entry.Verify(bearer(c), ev, s.now()); err != nil || t.UserID != h.UserID {
			h.UserID = ""
		}
	}
	return c.JSON(http.StatusOK, h)
}

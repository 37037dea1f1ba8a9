package producer

import (
	"errors"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/draw"
)

// PublicEvent is what anyone may read of an event (GET /v1/events/{id}):
// its phase and schedule, the size of its line, its waiting room page's
// branding and, for a drop, the draw's commitment, and its seed from the
// opening on.
type PublicEvent struct {
	EventID string      `json:"eventId"`
	Phase   queue.Phase `json:"phase"`
	// Page is the branding the waiting room page shows (absent: none).
	Page *queue.Page `json:"page,omitempty"`
	queue.Schedule
	Waiting int64             `json:"waiting"`
	Draw    *queue.DrawStatus `json:"draw,omitempty"`
	// ServerTime is the server's clock (unix ms), for countdowns.
	ServerTime int64 `json:"serverTime"`
}

// publicEvent answers GET /v1/events/{eventId}.
func (s *Server) publicEvent(c echo.Context) error {
	st, err := s.eventStatus(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, PublicEvent{
		EventID: st.ID, Phase: st.Phase, Page: st.Page, Schedule: st.Schedule, Waiting: st.Waiting, Draw: st.Draw,
		ServerTime: s.now().UnixMilli(),
	})
}

// eventStatus reads the status of the event the route names.
func (s *Server) eventStatus(c echo.Context) (queue.EventStatus, error) {
	id, err := s.eventParam(c)
	if err != nil {
		return queue.EventStatus{}, err
	}
	st, err := s.store.EventStatus(c.Request().Context(), id, s.now().UnixMilli())
	if errors.Is(err, queue.ErrEventNotFound) {
		return queue.EventStatus{}, queue.Errorf(queue.CodeEventNotFound, "event %s does not exist", id)
	}
	if err != nil {
		return queue.EventStatus{}, s.storeError("read event", err)
	}
	return st, nil
}

// exportDraw answers GET /v1/admin/events/{eventId}/draw after the opening:
// the seed, its commitment, the pre-queue's users and the order the line
// holds them in, for anyone to check with package draw or waitq-verify.
func (s *Server) exportDraw(c echo.Context) error {
	st, err := s.eventStatus(c)
	if err != nil {
		return err
	}
	if st.Draw == nil {
		return queue.Errorf(queue.CodeDrawNotRevealed, "event %s has no draw: it was never scheduled", st.ID)
	}
	if st.Event.ChainDraw() {
		return s.publicDraw(c) // the same chain as the public route
	}
	if st.Draw.Seed == "" {
		return queue.Errorf(queue.CodeDrawNotRevealed, "the draw of event %s is revealed at its opening", st.ID)
	}
	order, err := s.store.DrawOrder(c.Request().Context(), st.ID)
	if err != nil {
		return s.storeError("read draw", err)
	}
	users := slices.Clone(order)
	slices.Sort(users)
	return c.JSON(http.StatusOK, draw.Export{
		EventID: st.ID, OpensAt: st.OpensAt, Commitment: st.Draw.Commitment, Seed: st.Draw.Seed,
		Users: users, Order: order,
	})
}

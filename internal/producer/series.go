package producer

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/queue"
)

// eventSeries answers GET /v1/admin/events/{eventId}/series: the event's
// samples of the last half hour (queue.Series), what the console charts,
// read with one Redis command. An event with no sample yet (just created,
// or no gateway's slot monitor runs) has an empty list; an unknown one is
// 404.
func (s *Server) eventSeries(c echo.Context) error {
	id, err := s.eventParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	samples, err := s.store.Series(ctx, id, s.now().UnixMilli())
	if err != nil {
		return s.storeError("read series", err)
	}
	if len(samples) == 0 {
		if _, err := s.events.Event(ctx, id); errors.Is(err, queue.ErrEventNotFound) {
			return queue.Errorf(queue.CodeEventNotFound, "event %s does not exist", id)
		} else if err != nil && !errors.Is(err, queue.ErrRebuilding) {
			return s.storeError("read event", err)
		}
	}
	return c.JSON(http.StatusOK, queue.Series{EventID: id, PeriodMs: queue.SeriesPeriodMs, SpanMs: queue.SeriesSpanMs, Samples: samples})
}

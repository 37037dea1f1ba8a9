package producer

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/waitq/waitq/internal/queue"
)

// DELETE of an event: its live state, then its log, with the tombstone
// between (docs/data.md).

// deleteEvent removes the event unless a slot is held, leaving its
// tombstone, then its topic, then the tombstone: 204 once both are gone.
// When the topic's deletion fails the event is gone but its log is not:
// 503 broker_unavailable, and a DELETE again (of the tombstoned id, not a
// 404) retries it.
func (s *Server) deleteEvent(c echo.Context) error {
	id, err := s.eventParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.store.DeleteEvent(ctx, id, s.now().UnixMilli()); err != nil {
		return s.eventError(id, "delete event", err)
	}
	s.events.Forget(id)
	if err := s.deleteLog(ctx, id, true); err != nil {
		return err
	}
	s.log.Info("event deleted", "event", id)
	return c.NoContent(http.StatusNoContent)
}

// deleteLog deletes the topic of id, a deleted event, and then its
// tombstone; known says the caller knows the tombstone stands (the DELETE
// just left it or found it), else it is read first and nothing is done
// without one. A topic that could not be deleted keeps the tombstone and
// is answered 503 broker_unavailable, as queue.ErrLogNotDeleted.
//
// Only a tombstone deletes a topic here: after a loss of Redis there is
// none, so re-creating an event never deletes the log a rebuild needs.
func (s *Server) deleteLog(ctx context.Context, id string, known bool) error {
	if !known {
		dead, err := s.store.Tombstoned(ctx, id)
		if err != nil {
			return s.storeError("read tombstone", err)
		}
		if !dead {
			return nil
		}
	}
	if err := s.topics.DeleteTopic(ctx, id); err != nil {
		s.log.Warn("topic deletion of a deleted event failed; its tombstone stays", "event", id, "err", err)
		return queue.Errorf(queue.CodeBrokerUnavailable, "event %s is deleted but its log (topic) could not be: DELETE the event again once the broker answers (a PUT creating it anew retries too)", id)
	}
	if err := s.store.ClearTombstone(ctx, id); err != nil {
		// The topic is gone: the tombstone only asks for a deletion
		// that is now harmless (a missing topic is no error).
		s.log.Warn("the tombstone of a deleted event stays after its topic's deletion", "event", id, "err", err)
	}
	return nil
}

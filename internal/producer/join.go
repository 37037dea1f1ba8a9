package producer

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// JoinKeyHeader carries a join's join key: the same key on every try of one
// join, so that a retry landing after that join was admitted queues
// nobody again (queue.Message.JoinKey).
const JoinKeyHeader = "Idempotency-Key"

// JoinResponse is the 202 body of a join.
type JoinResponse struct {
	EventID   string `json:"eventId"`
	UserID    string `json:"userId"`
	JoinedAt  int64  `json:"joinedAt"`
	Ticket    string `json:"ticket"`
	StatusURL string `json:"statusUrl"`
}

// LeaveResponse is the 202 body of a leave.
type LeaveResponse struct {
	EventID string `json:"eventId"`
	UserID  string `json:"userId"`
	LeftAt  int64  `json:"leftAt"`
}

// join stamps the request, publishes it and answers 202 once Kafka
// acknowledged it. A repeated join is published too; the consumer keeps the
// first place.
func (s *Server) join(c echo.Context) error {
	m, err := s.enqueue(c, queue.OpJoin)
	if err != nil {
		return err
	}
	ticket := s.tickets.Sign(queue.Ticket{
		EventID: m.EventID, UserID: m.UserID, JoinedAt: m.TS,
		Expires: m.TS + s.cfg.TicketTTL.Milliseconds(),
	})
	r := JoinResponse{
		EventID: m.EventID, UserID: m.UserID, JoinedAt: m.TS, Ticket: ticket,
		StatusURL: s.cfg.StatusPath + m.EventID + "?ticket=" + url.QueryEscape(ticket),
	}
	if !plainJSON(c) {
		return c.JSON(http.StatusAccepted, r)
	}
	buf := replyBuffers.Get().(*[]byte)
	defer replyBuffers.Put(buf)
	*buf = r.appendJSON((*buf)[:0])
	return c.JSONBlob(http.StatusAccepted, *buf)
}

// appendJSON appends r and a newline, as c.JSON writes it.
func (r *JoinResponse) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"eventId":`...)
	dst = queue.AppendJSONString(dst, r.EventID)
	dst = append(dst, `,"userId":`...)
	dst = queue.AppendJSONString(dst, r.UserID)
	dst = append(dst, `,"joinedAt":`...)
	dst = strconv.AppendInt(dst, r.JoinedAt, 10)
	dst = append(dst, `,"ticket":`...)
	dst = queue.AppendJSONString(dst, r.Ticket)
	dst = append(dst, `,"statusUrl":`...)
	dst = queue.AppendJSONString(dst, r.StatusURL)
	return append(dst, "}\n"...)
}

// replyBuffers are the buffers of join replies (*[]byte).
var replyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// plainJSON reports whether c.JSON would write the compact JSON of
// encoding/json's Encoder (echo's serializer, no pretty printing), so that
// a reply encoded by hand is the same bytes.
func plainJSON(c echo.Context) bool {
	e := c.Echo()
	switch e.JSONSerializer.(type) {
	case *echo.DefaultJSONSerializer, echo.DefaultJSONSerializer:
	default:
		return false
	}
	if e.Debug {
		return false
	}
	if c.Request().URL.RawQuery == "" {
		return true
	}
	_, pretty := c.QueryParams()["pretty"]
	return !pretty
}

// leave publishes a leave through the same partition as the user's join.
// Leaving is allowed in every phase.
func (s *Server) leave(c echo.Context) error {
	m, err := s.enqueue(c, queue.OpLeave)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, LeaveResponse{EventID: m.EventID, UserID: m.UserID, LeftAt: m.TS})
}

// enqueue validates a join or leave, stamps it with the server time and
// publishes it; it returns the message once Kafka acknowledged it. A join
// first passes the door (passDoor); its one-time proofs are given back when
// the broker did not acknowledge it, so the visitor may try again.
func (s *Server) enqueue(c echo.Context, op queue.Op) (queue.Message, error) {
	ev, id, err := s.queueRequest(c)
	if err != nil {
		return queue.Message{}, err
	}
	m := queue.NewMessage(op, ev.ID, id.user, s.now().UnixMilli())
	if op == queue.OpLeave {
		return m, s.publish(c.Request().Context(), m)
	}
	if v := c.Request().Header.Get(JoinKeyHeader); v != "" {
		if !queue.ValidJoinKey(v) {
			return queue.Message{}, queue.Errorf(queue.CodeInvalidBody, "%s must be 1-%d characters of [A-Za-z0-9_-]", JoinKeyHeader, queue.MaxJoinKeyLen)
		}
		m.JoinKey = v
	}
	// The stamp decides: a join stamped before the opening is in the
	// pre-queue's draw, wherever and whenever it reaches the line.
	if err := ev.CheckJoin(m.TS); err != nil {
		return queue.Message{}, err
	}
	spends, err := s.passDoor(c, ev, id)
	if err != nil {
		return queue.Message{}, err
	}
	if err := s.publish(c.Request().Context(), m); err != nil {
		if uerr := s.door.Unspend(context.WithoutCancel(c.Request().Context()), ev.ID, spends); uerr != nil {
			s.log.Warn("give back a join's one-time proofs", "event", ev.ID, "err", uerr)
		}
		return queue.Message{}, err
	}
	return m, nil
}

// queueRequest validates a join, leave or challenge request: the event id,
// the event's existence, and who makes it (identify).
func (s *Server) queueRequest(c echo.Context) (queue.Event, identity, error) {
	id := c.Param("eventId")
	if err := queue.CheckEventID(id); err != nil {
		return queue.Event{}, identity{}, err
	}
	ev, err := s.events.Event(c.Request().Context(), id)
	switch {
	case errors.Is(err, queue.ErrEventNotFound):
		return queue.Event{}, identity{}, queue.Errorf(queue.CodeEventNotFound, "event %s does not exist", id)
	case err != nil:
		return queue.Event{}, identity{}, httpkit.StoreError(s.log, "look up event "+id, err)
	}
	who, err := s.identify(c, ev)
	if err != nil {
		return queue.Event{}, identity{}, err
	}
	return ev, who, nil
}

// publish sends m and waits for the acknowledgement at most PublishTimeout.
// After a timeout the message may still land: a retried join keeps the first
// place, so the client can safely try again.
func (s *Server) publish(ctx context.Context, m queue.Message) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.PublishTimeout)
	defer cancel()
	start := time.Now()
	if err := s.pub.Publish(ctx, m); err != nil {
		s.log.Warn("publish failed", "event", m.EventID, "op", m.Op, "err", err)
		return queue.Errorf(queue.CodeBrokerUnavailable, "the message broker did not acknowledge the request; try again")
	}
	s.metrics.publish.Observe(time.Since(start).Seconds())
	s.metrics.joins.WithLabelValues(string(m.Op)).Inc()
	return nil
}

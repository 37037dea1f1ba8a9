package producer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/draw"
)

// Defaults of a new event's configuration.
const (
	DefaultStaySeconds = 300
)

// AdminMaxBodyBytes caps the bodies of the admin API (64 KiB): an event's
// page, in Korean at its longest, is over the public routes' 4 KiB.
const AdminMaxBodyBytes = 64 << 10

// requireAdmin checks the bearer token in constant time.
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.AdminToken == "" {
			return queue.Errorf(queue.CodeAdminDisabled, "the admin API is disabled: no admin token is configured")
		}
		if !s.isAdmin(c.Request()) {
			return queue.Errorf(queue.CodeUnauthorized, "a valid admin bearer token is required")
		}
		return next(c)
	}
}

// isAdmin reports whether r bears the admin token (never, when none is
// configured).
func (s *Server) isAdmin(r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get(echo.HeaderAuthorization), "Bearer ")
	return ok && s.cfg.AdminToken != "" && sameSecret(token, s.cfg.AdminToken)
}

// sameSecret compares a presented secret with the expected one in time that
// depends on neither (both are hashed first); an empty expected secret
// matches nothing.
func sameSecret(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return want != "" && subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

func (s *Server) eventParam(c echo.Context) (string, error) {
	id := c.Param("eventId")
	return id, queue.CheckEventID(id)
}

// putEvent creates or updates an event: its topic first, then its
// configuration, so an event visible in Redis always has its topic. An id
// deleted whose log is still to delete (tombstoned) gets that deletion
// first: a new event never starts on the deleted one's log.
func (s *Server) putEvent(c echo.Context) error {
	id, err := s.eventParam(c)
	if err != nil {
		return err
	}
	body, err := decodeEventBody(c.Request().Body)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	cur, err := s.store.Event(ctx, id)
	exists := err == nil
	if err != nil && !errors.Is(err, queue.ErrEventNotFound) {
		return s.storeError("read event", err)
	}
	ev, err := s.eventFrom(id, cur, exists, body)
	if err != nil {
		return err
	}
	if !exists {
		if err := s.deleteLog(ctx, id, false); err != nil {
			return err
		}
	}
	if err := s.topics.EnsureTopic(ctx, id, ev.Partitions); err != nil {
		s.log.Warn("topic creation failed", "event", id, "err", err)
		return queue.Errorf(queue.CodeBrokerUnavailable, "could not create the event's topic; try again")
	}
	created, err := s.store.PutEvent(ctx, ev)
	if err != nil {
		// broker_unavailable when the configuration was stored but its
		// record could not be written: the PUT is to be repeated; or when
		// a DELETE tombstoned the id meanwhile (ErrLogNotDeleted).
		return s.eventError(id, "put event", err)
	}
	s.events.Forget(id)
	s.log.Info("event saved", "event", ev.String(), "created", created)
	if exists && makesRoom(cur, ev, s.now().UnixMilli()) {
		s.admitNow(ctx, id)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	st, err := s.store.EventStatus(ctx, id, s.now().UnixMilli())
	if err != nil {
		return s.storeError("read event", err)
	}
	return c.JSON(status, st)
}

// eventFrom is the event id as body makes it of cur (exists: the event
// stored), or of a new event's defaults: the body applied, a report and a
// shop token minted where it has none, its schedule set, then checked.
func (s *Server) eventFrom(id string, cur queue.Event, exists bool, body EventBody) (queue.Event, error) {
	ev := queue.Event{ID: id, Capacity: 0, StaySeconds: DefaultStaySeconds, State: queue.StateOpen, Partitions: s.cfg.DefaultPartitions, Away: queue.DefaultAway()}
	if exists {
		ev = cur
	}
	body.apply(&ev)
	if err := adapt(&ev, body.Adaptive); err != nil {
		return queue.Event{}, err
	}
	if err := replacePolicy(&ev.Challenge, body.Challenge, "null or an object with mode, difficulty, minDifficulty, maxDifficulty and joinsPerSecond"); err != nil {
		return queue.Event{}, err
	}
	if err := replacePolicy(&ev.JoinToken, body.JoinToken, "null or an object with required and keys"); err != nil {
		return queue.Event{}, err
	}
	if err := replacePolicy(&ev.Page, body.Page, "null or an object with title, message, logoUrl, accentColor, template and locale"); err != nil {
		return queue.Event{}, err
	}
	if err := replaceAway(&ev.Away, body.Away); err != nil {
		return queue.Event{}, err
	}
	if err := mintTokens(&ev); err != nil {
		return queue.Event{}, err
	}
	if err := s.schedule(&ev, body, s.now().UnixMilli()); err != nil {
		return queue.Event{}, err
	}
	// More partitions would move keys to other partitions, and a leave could
	// then overtake its join: the count is fixed at creation.
	if exists && body.Partitions != nil && *body.Partitions != cur.Partitions {
		return queue.Event{}, queue.Errorf(queue.CodeInvalidConfig, "partitions cannot change after creation (is %d)", cur.Partitions)
	}
	if !exists && body.Capacity == nil {
		return queue.Event{}, queue.Errorf(queue.CodeInvalidConfig, "capacity is required to create an event")
	}
	if err := ev.Validate(); err != nil {
		return queue.Event{}, err
	}
	return ev, nil
}

// mintTokens gives ev a report token and a shop token where it has none.
func mintTokens(ev *queue.Event) error {
	var err error
	if ev.ReportToken == "" {
		if ev.ReportToken, err = newReportToken(); err != nil {
			return err
		}
	}
	if ev.ShopToken == "" {
		if ev.ShopToken, err = newReportToken(); err != nil {
			return err
		}
	}
	return nil
}

// makesRoom reports whether next may admit someone cur could not at
// nowMs: the event opened (a resume), more capacity, a higher rate (0: no
// limit) or a higher adaptive floor, adaptive admission turned off (its
// rate was at most the ceiling), or an opening moved to now or before. Such
// a change must not wait for the slot monitor's next tick; one that only
// lowers a limit or turns the controller on admits nobody sooner, and
// leaves the controller's first step to the monitor.
func makesRoom(cur, next queue.Event, nowMs int64) bool {
	raised := func(from, to int) bool { return from > 0 && (to == 0 || to > from) } // 0: no limit
	floorUp := cur.Adaptive != nil && next.Adaptive != nil && next.Adaptive.MinAdmitPerMinute > cur.Adaptive.MinAdmitPerMinute
	return (next.State == queue.StateOpen && cur.State != queue.StateOpen) ||
		next.Capacity > cur.Capacity ||
		raised(cur.AdmitPerMinute, next.AdmitPerMinute) || floorUp ||
		(cur.Adaptive != nil && next.Adaptive == nil) ||
		(next.OpensAt < cur.OpensAt && next.OpensAt <= nowMs)
}

// admitNow runs event id's admission step at once, as one slot-monitor tick
// of that event alone (without the sweep: the disconnect grace is the
// gateway's) with the default batch: the same atomic step, and with the
// store's recorder the admissions are recorded before their users are told
// through the admissions channel. A failure is only logged: the change is
// stored, and the next tick admits.
func (s *Server) admitNow(ctx context.Context, id string) {
	res, err := s.store.Tick(ctx, queue.TickRequest{EventIDs: []string{id}, NowMs: s.now().UnixMilli(), AdmitBatch: queue.DefaultAdmitBatch})
	if err != nil {
		s.log.Warn("admission after the change failed; the slot monitor's tick admits", "event", id, "err", err)
		return
	}
	for _, r := range res {
		if len(r.Admitted) > 0 {
			s.log.Info("admitted after the change", "event", id, "users", len(r.Admitted))
		}
		if r.HoldsExpired > 0 {
			// ws-gateway's waitq_holds_expired_total counts the others.
			s.log.Info("item holds ended with the slots expired after the change", "event", id, "holds", r.HoldsExpired)
		}
	}
}

// schedule applies body's schedule to ev. The opening and the pre-queue are
// fixed once the pre-queue took joins (moving them would change who is in
// the draw); a new opening must lie in the future. The first schedule draws
// the event's seed, which then stays for the event's life: its commitment
// may have been published.
func (s *Server) schedule(ev *queue.Event, body EventBody, nowMs int64) error {
	next := ev.Schedule
	set(&next.OpensAt, body.OpensAt)
	set(&next.PrequeueSeconds, body.PrequeueSeconds)
	set(&next.ClosesAt, body.ClosesAt)
	if next.OpensAt == 0 && body.PrequeueSeconds == nil {
		next.PrequeueSeconds = 0 // removing the schedule removes its pre-queue
	}
	moved := next.OpensAt != ev.OpensAt || next.PrequeueSeconds != ev.PrequeueSeconds
	switch {
	case moved && ev.Locked(nowMs):
		return queue.Errorf(queue.CodeScheduleLocked, "the pre-queue of event %s has started: opensAt and prequeueSeconds can no longer change", ev.ID)
	case moved && next.OpensAt != 0 && next.OpensAt <= nowMs:
		return queue.Errorf(queue.CodeInvalidConfig, "opensAt must be in the future")
	}
	ev.Schedule = next
	if ev.OpensAt > 0 && ev.Seed == nil {
		seed, err := draw.NewSeed()
		if err != nil {
			return err
		}
		ev.Seed = &seed
	}
	return setDrawSource(ev, body.Draw, nowMs)
}

// newReportToken returns a random report token (or shop token): 32 bytes,
// base64url.
func newReportToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("producer: report token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// reportHealth keeps a health report of the event: POST
// /v1/admin/events/{eventId}/health with the admin token or the event's
// report token. A token that is neither is refused with 401 whether the
// event exists or not.
func (s *Server) reportHealth(c echo.Context) error {
	id, err := s.eventParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	token, _ := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
	if !s.isAdmin(c.Request()) {
		ev, err := s.events.Event(ctx, id)
		if err != nil && !errors.Is(err, queue.ErrEventNotFound) {
			return s.storeError("read event", err)
		}
		if err != nil || token == "" || !sameSecret(token, ev.ReportToken) {
			return queue.Errorf(queue.CodeUnauthorized, "the admin token or event %s's report token is required", id)
		}
	}
	var r queue.HealthReport
	if err := httpkit.DecodeJSON(c.Request().Body, &r, queue.CodeInvalidBody, "a JSON object with reporter, windowMs, requests, p95Ms, errorRate and load"); err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return err
	}
	if err := s.store.ReportHealth(ctx, id, r, s.now().UnixMilli()); err != nil {
		return s.eventError(id, "health report", err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) getEvent(c echo.Context) error {
	st, err := s.eventStatus(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// EventList is the body of the admin event listing.
type EventList struct {
	Events []queue.EventStatus `json:"events"`
}

func (s *Server) listEvents(c echo.Context) error {
	ctx := c.Request().Context()
	ids, err := s.store.EventIDs(ctx)
	if err != nil {
		return s.storeError("list events", err)
	}
	out := EventList{Events: make([]queue.EventStatus, 0, len(ids))}
	now := s.now().UnixMilli()
	for _, id := range ids {
		st, err := s.store.EventStatus(ctx, id, now)
		if errors.Is(err, queue.ErrEventNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return s.storeError("read event", err)
		}
		out.Events = append(out.Events, st)
	}
	return c.JSON(http.StatusOK, out)
}

// eventError is the answer to a store call on event id that failed: 404
// for an unknown event, the domain error it carries, else
// store_unavailable (logged with what).
func (s *Server) eventError(id, what string, err error) error {
	var qe *queue.Error
	switch {
	case errors.Is(err, queue.ErrEventNotFound):
		return queue.Errorf(queue.CodeEventNotFound, "event %s does not exist", id)
	case errors.As(err, &qe):
		return err
	}
	return s.storeError(what, err)
}

func (s *Server) storeError(what string, err error) error {
	return httpkit.StoreError(s.log, what, err)
}

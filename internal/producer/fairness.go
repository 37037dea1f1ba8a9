package producer

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/queue"
)

// The fairness report routes (docs/api.md, "Fairness report").

// FairnessTTL is how long a process serves an event's fairness report
// from memory, and its Cache-Control max-age: however many ask, each
// process reads an event's report from the store at most once a TTL.
const FairnessTTL = 2 * time.Second

// reportCache keeps each found event's report for FairnessTTL. The one
// caller that finds an entry expired reads the store; the others of that
// moment wait for its answer instead of each reading. An unknown id
// leaves no entry (its callers each read: nothing grows with them).
type reportCache struct {
	store queue.ReportStore
	now   func() time.Time

	mu      sync.Mutex
	entries map[string]*cachedReport
}

type cachedReport struct {
	mu      sync.Mutex // held by the caller reading the store
	r       queue.FairnessReport
	expires time.Time
}

func newReportCache(store queue.ReportStore, now func() time.Time) *reportCache {
	return &reportCache{store: store, now: now, entries: map[string]*cachedReport{}}
}

// report returns id's report, read from the store at most once a TTL.
func (c *reportCache) report(ctx context.Context, id string) (queue.FairnessReport, error) {
	c.mu.Lock()
	e := c.entries[id]
	if e == nil {
		e = &cachedReport{}
		c.entries[id] = e
	}
	c.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	now := c.now()
	if now.Before(e.expires) {
		return e.r, nil
	}
	r, err := c.store.FairnessReport(ctx, id, now.UnixMilli())
	if err != nil {
		if e.expires.IsZero() || errors.Is(err, queue.ErrEventNotFound) { // leave nothing behind
			c.mu.Lock()
			delete(c.entries, id)
			c.mu.Unlock()
		}
		return queue.FairnessReport{}, err
	}
	e.r, e.expires = r, now.Add(FairnessTTL)
	return r, nil
}

// fairnessReport answers GET /v1/events/{eventId}/fairness.
func (s *Server) fairnessReport(c echo.Context) error {
	id, err := s.eventParam(c)
	if err != nil {
		return err
	}
	r, err := s.reports.report(c.Request().Context(), id)
	switch {
	case errors.Is(err, queue.ErrEventNotFound):
		return queue.Errorf(queue.CodeEventNotFound, "event %s does not exist", id)
	case err != nil:
		return s.storeError("read fairness report", err)
	}
	c.Response().Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(FairnessTTL/time.Second)))
	return c.JSON(http.StatusOK, r)
}

// admittedOrder answers GET /v1/events/{eventId}/fairness/mine: the
// caller's own line (identity as a join's), 409 not_admitted when they are
// not among the event's latest admissions.
func (s *Server) admittedOrder(c echo.Context) error {
	ev, who, err := s.queueRequest(c)
	if err != nil {
		return err
	}
	o, err := s.reports.store.AdmittedOrder(c.Request().Context(), ev.ID, who.user)
	switch {
	case errors.Is(err, queue.ErrNotAdmitted):
		return queue.Errorf(queue.CodeNotAdmitted, "%s is not among the latest admissions of event %s", who.user, ev.ID)
	case err != nil:
		return s.storeError("read admitted order", err)
	}
	c.Response().Header().Set("Cache-Control", "private, no-store")
	return c.JSON(http.StatusOK, o)
}

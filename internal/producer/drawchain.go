package producer

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/draw"
)

// A chain draw's routes (docs/api.md, "Ticket drops"): the operator's
// public value, the public draw, and each visitor's receipt.

// setDrawSource applies an admin PUT's draw object to ev: its public
// source is fixed once the pre-queue started (who joined may depend on
// it), and the first one draws the event's secret salt key, which then
// stays for the event's life.
func setDrawSource(ev *queue.Event, body *DrawBody, nowMs int64) error {
	if body == nil {
		return nil
	}
	next := ev.DrawSource
	if err := replacePolicy(&next, body.PublicSource, "null or an object with name, round, ref and deadlineSeconds"); err != nil {
		return err
	}
	if !reflect.DeepEqual(next, ev.DrawSource) && ev.Locked(nowMs) {
		return queue.Errorf(queue.CodeScheduleLocked, "the pre-queue of event %s has started: its draw's public source can no longer change", ev.ID)
	}
	ev.DrawSource = next
	if next != nil && ev.SaltKey == nil {
		var k [draw.SaltKeySize]byte
		if _, err := rand.Read(k[:]); err != nil {
			return err
		}
		ev.SaltKey = &k
	}
	return nil
}

// PublicValueBody is the body of PUT /v1/admin/events/{id}/draw/public-value.
type PublicValueBody struct {
	// Value is the public source's value, in hex.
	Value string `json:"value"`
}

// chainEvent reads the event the route names, with its chain draw's state
// as of now (frozen or made when its time came).
func (s *Server) chainEvent(c echo.Context) (queue.Event, error) {
	st, err := s.eventStatus(c)
	if err != nil {
		return queue.Event{}, err
	}
	if !st.Event.ChainDraw() {
		return queue.Event{}, queue.Errorf(queue.CodeNotChainDraw, "event %s names no public source: its draw is a classic one (GET /v1/admin/events/%s/draw)", st.ID, st.ID)
	}
	return st.Event, nil
}

// supplyPublicValue answers PUT /v1/admin/events/{eventId}/draw/public-value:
// the draw is made with the value, once.
func (s *Server) supplyPublicValue(c echo.Context) error {
	var body PublicValueBody
	if err := httpkit.DecodeJSON(c.Request().Body, &body, queue.CodeInvalidBody, `an object {"value":"<hex>"}`); err != nil {
		return err
	}
	value, err := draw.ParsePublicValue(body.Value)
	if err != nil {
		return queue.Errorf(queue.CodeInvalidBody, "value: %v", err)
	}
	ev, err := s.chainEvent(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.store.SupplyPublicValue(ctx, ev, value, s.now().UnixMilli()); err != nil {
		return s.drawError("supply the public value", err)
	}
	s.events.Forget(ev.ID)
	s.admitNow(ctx, ev.ID)
	s.log.Info("chain draw made", "event", ev.ID)
	return s.writeDraw(c, "")
}

// drawError passes a coded error on and wraps a store failure.
func (s *Server) drawError(what string, err error) error {
	if queue.ErrorCode(err) != "" {
		return err
	}
	if errors.Is(err, queue.ErrEventNotFound) {
		return queue.Errorf(queue.CodeEventNotFound, "the event does not exist")
	}
	return s.storeError(what, err)
}

// publicDraw answers GET /v1/events/{eventId}/draw: a chain draw as
// published once made (draw.Chain). A made draw never changes, and it is
// large (every entry and number: ~8 MB at 100,000): caches and CDNs may
// keep it for drawCacheAge (not immutable: an event deleted and made again
// under the same id draws anew).
func (s *Server) publicDraw(c echo.Context) error {
	return s.writeDraw(c, "public, max-age="+strconv.Itoa(drawCacheAge))
}

// writeDraw answers with the route's event's made chain draw, with
// cacheControl unless it is "".
func (s *Server) writeDraw(c echo.Context, cacheControl string) error {
	_, m, err := s.routeChain(c)
	if err != nil {
		return err
	}
	if cacheControl != "" {
		c.Response().Header().Set("Cache-Control", cacheControl)
	}
	return c.JSON(http.StatusOK, m.chain)
}

// routeChain returns the route's event and its made chain draw.
func (s *Server) routeChain(c echo.Context) (queue.Event, *madeChain, error) {
	ev, err := s.chainEvent(c)
	if err != nil {
		return ev, nil, err
	}
	m, err := s.publicChain(c.Request().Context(), ev)
	if err != nil {
		return ev, nil, s.drawError("read the draw", err)
	}
	return ev, m, nil
}

// publicDrawNumbers answers GET /v1/events/{eventId}/draw/numbers: a made
// chain draw's numbers in compact form (draw.Chain.AppendNumbers), what
// the page's check needs of the draw (~0.7 MB at 100,000 entries, not the
// whole draw's ~8 MB), cached as the whole draw.
func (s *Server) publicDrawNumbers(c echo.Context) error {
	_, m, err := s.routeChain(c)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(drawCacheAge))
	return c.Blob(http.StatusOK, "application/octet-stream", m.numbers)
}

// drawCacheAge is the max-age, in seconds, of a made chain draw's answer.
const drawCacheAge = 300

// drawReceipt answers GET /v1/events/{eventId}/draw/receipt?ticket=…: the
// ticket's holder's receipt (draw.Receipt), which only they may read: it
// carries their salt.
func (s *Server) drawReceipt(c echo.Context) error {
	id, err := s.eventParam(c)
	if err != nil {
		return err
	}
	t, err := s.tickets.Verify(c.QueryParam("ticket"), id, s.now())
	if err != nil {
		return queue.Errorf(queue.CodeInvalidTicket, "the ticket is not valid for event %s", id)
	}
	ev, m, err := s.routeChain(c)
	if err != nil {
		return err
	}
	r, ok := m.chain.Receipt(m.tree, *ev.SaltKey, t.UserID)
	if !ok {
		return queue.Errorf(queue.CodeNotInDraw, "you are not among the entries of event %s's draw (you joined after its entries froze, or not during its pre-queue)", id)
	}
	return c.JSON(http.StatusOK, r)
}

// A made chain draw never changes: producer-api keeps the latest few it
// built, so that every visitor's receipt does not rebuild the whole tree.

// chainKey names one made draw: an event deleted and made again is
// another (its commitment differs).
type chainKey struct {
	event, commitment string
	drawnAt           int64
}

type madeChain struct {
	chain   *draw.Chain
	tree    *draw.Tree
	numbers []byte // the compact form (draw.Chain.AppendNumbers)
}

// chainCache holds at most maxChains made draws; safe for concurrent use.
type chainCache struct {
	mu sync.Mutex
	m  map[chainKey]*madeChain
}

const maxChains = 8

// publicChain returns ev's made chain draw, from the cache or the store.
func (s *Server) publicChain(ctx context.Context, ev queue.Event) (*madeChain, error) {
	if ev.Seed == nil || ev.Chain.DrawnAt == 0 {
		_, _, err := s.store.PublicChain(ctx, ev) // its error says why
		return nil, cmp.Or(err, errors.New("producer: a chain draw without its seed or drawnAt"))
	}
	k := chainKey{ev.ID, ev.Seed.Commitment(), ev.Chain.DrawnAt}
	s.chains.mu.Lock()
	m, ok := s.chains.m[k]
	s.chains.mu.Unlock()
	if ok {
		return m, nil
	}
	c, t, err := s.store.PublicChain(ctx, ev)
	if err != nil {
		return nil, err
	}
	m = &madeChain{c, t, c.AppendNumbers(nil)}
	s.chains.mu.Lock()
	defer s.chains.mu.Unlock()
	if len(s.chains.m) >= maxChains {
		clear(s.chains.m)
	}
	s.chains.m[k] = m
	return m, nil
}

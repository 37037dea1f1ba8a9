package gateway

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/pkg/api"
	"github.com/waitq/waitq/pkg/entry"
	"github.com/waitq/waitq/pkg/queue"
	"github.com/waitq/waitq/pkg/web"
)

// Store is what the gateway needs of the live state.
type Store interface {
	Event(ctx context.Context, id string) (queue.Event, error)
	EventIDs(ctx context.Context) ([]string, error)
	Status(ctx context.Context, eventID string, users []string, nowMs int64) (queue.StatusBatch, error)
	Tick(ctx context.Context, eventIDs []string, nowMs int64, batch int, presenceCutoffMs int64, sweepLimit int) ([]queue.TickResult, error)
	Release(ctx context.Context, eventID, userID string, nowMs int64) (bool, error)
	Ping(ctx context.Context) error
}

// Config tunes the gateway. Zero values take the defaults noted.
type Config struct {
	StatusInterval  time.Duration // 5 s: how often each socket gets a status frame
	AdmitInterval   time.Duration // 5 s: how often the slot monitor admits
	AdmitBatch      int           // 100: the most users one event admits per tick
	DisconnectGrace time.Duration // 30 s: how long a waiting user may be gone
	// TrustUserHeader accepts the X-User-Id header instead of a ticket.
	TrustUserHeader bool
	// AllowedOrigins are the host patterns of browser origins allowed
	// besides the gateway's own host.
	AllowedOrigins []string
	SendQueue      int           // 16: frames queued per socket before it counts as too slow
	WriteTimeout   time.Duration // 5 s: the longest one frame may take to write
	PingInterval   time.Duration // 30 s
	// PendingWindow is how long after a join (the ticket's stamp) a user not
	// yet in Redis is "pending" rather than "not_queued" (2 min).
	PendingWindow time.Duration
	MaxBodyBytes  int64 // 4 KiB
	// ProducerURL is producer-api's public base URL, for the waiting-room
	// page's joins; empty when both share the page's origin.
	ProducerURL string
	// StatusLimit bounds status polls per client IP (zero: no limit).
	StatusLimit api.RateLimit
	// ClientIPs finds client addresses behind trusted proxies (nil: the
	// direct peer).
	ClientIPs *api.ClientIPs
}

func (c *Config) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.StatusInterval, 5*time.Second)
	def(&c.AdmitInterval, 5*time.Second)
	def(&c.DisconnectGrace, 30*time.Second)
	def(&c.WriteTimeout, 5*time.Second)
	def(&c.PingInterval, 30*time.Second)
	def(&c.PendingWindow, 2*time.Minute)
	if c.AdmitBatch <= 0 {
		c.AdmitBatch = 100
	}
	if c.SendQueue <= 0 {
		c.SendQueue = 16
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 4 << 10
	}
}

// Deps are the parts a Server talks to.
type Deps struct {
	Store     Store
	Publisher queue.Publisher // carries leaves through the join topic
	Tickets   *queue.TicketSigner
	Entry     *entry.Keyring // signs entry tokens; verifies them with older keys too
	Logger    *slog.Logger
	Registry  *prometheus.Registry
	Now       func() time.Time
}

// Server is ws-gateway.
type Server struct {
	cfg     Config
	store   Store
	events  *queue.EventCache // whether an event exists, at connect and poll
	pub     queue.Publisher
	tickets *queue.TicketSigner
	entry   *entry.Keyring
	log     *slog.Logger
	now     func() time.Time
	hub     *hub
	rates   *rates
	metrics *metrics
	e       *echo.Echo

	baseCtx context.Context // ends when Run ends; sockets live under it
	ready   chan struct{}

	greetMu  sync.Mutex
	greeting []*conn
	greetSig chan struct{}
}

// sweepLimit bounds the users one monitor tick removes per event after the
// disconnect grace.
const sweepLimit = 1000

// New returns a Server with its routes. Call Run to start its loops; sockets
// are refused until then.
func New(cfg Config, d Deps) *Server {
	cfg.defaults()
	d.Logger, d.Registry, d.Now = api.RuntimeDefaults(d.Logger, d.Registry, d.Now)
	if d.Entry == nil {
		// Tokens of an ephemeral key verify only here: fine for a single
		// gateway in tests, never what the app wires.
		var seed [32]byte
		_, _ = rand.Read(seed[:])
		d.Entry, _ = entry.NewKeyring("ephemeral", seed[:], nil)
	}
	s := &Server{
		cfg: cfg, store: d.Store, pub: d.Publisher, tickets: d.Tickets, entry: d.Entry, log: d.Logger, now: d.Now,
		hub: newHub(), rates: newRates(), ready: make(chan struct{}), greetSig: make(chan struct{}, 1),
		// A burst of connects at the start of a sale costs Redis one lookup
		// a second per event, not one per socket.
		events: queue.NewEventCache(d.Store, time.Second, d.Now),
	}
	s.metrics = newMetrics(d.Registry, s.hub)
	e := api.NewEcho(api.BaseOptions{Logger: d.Logger, Registry: d.Registry, MaxBodyBytes: cfg.MaxBodyBytes, Ready: api.StoreAndBrokerReady(d.Store, d.Publisher), OpenAPI: api.GatewayOpenAPI})
	e.GET("/queue-status/:eventId", s.socket)
	if cfg.ClientIPs == nil {
		cfg.ClientIPs = &api.ClientIPs{}
	}
	e.GET("/v1/events/:eventId/status", s.pollStatus, api.Limit(cfg.StatusLimit, cfg.ClientIPs, d.Now))
	e.POST("/v1/events/:eventId/release", s.releaseHTTP)
	e.POST("/v1/entry/verify", s.verifyEntry)
	e.GET("/.well-known/jwks.json", s.jwks)
	web.Register(e, web.Config{ProducerURL: cfg.ProducerURL, DefaultEvent: "demo"})
	s.e = e
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

// Echo returns the router, for listing routes.
func (s *Server) Echo() *echo.Echo { return s.e }

// Sockets returns the number of open sockets.
func (s *Server) Sockets() int { return s.hub.count() }

// Run runs the status ticker, the greeter and the slot monitor until ctx
// ends, then closes every socket with 1001.
func (s *Server) Run(ctx context.Context) error {
	s.baseCtx = ctx
	close(s.ready)
	var wg sync.WaitGroup
	wg.Go(func() { s.every(ctx, s.cfg.StatusInterval, s.statusTick) })
	wg.Go(func() { s.every(ctx, s.cfg.AdmitInterval, s.MonitorTick) })
	wg.Go(func() { s.greetLoop(ctx) })
	wg.Go(func() { s.every(ctx, watchdogPeriod(s.cfg.WriteTimeout), s.watchWrites) })
	wg.Wait()
	// Sockets live under a context shutdown does not cancel (a cancelled
	// read would drop them without a close frame): each is closed with
	// 1001, and Run waits a while for the close handshakes.
	for _, conns := range s.hub.byEvent() {
		for _, c := range conns {
			c.close(CloseShuttingDown, "server shutting down")
		}
	}
	deadline := time.Now().Add(s.cfg.WriteTimeout)
	for s.hub.count() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// watchdogPeriod is how often stuck writes are looked for: a quarter of the
// write timeout, so a stuck socket is aborted within 1.25 times it.
func watchdogPeriod(writeTimeout time.Duration) time.Duration {
	return max(writeTimeout/4, time.Millisecond)
}

// watchWrites aborts every socket whose write has taken longer than
// WriteTimeout: one goroutine for all sockets in place of a timer per
// write.
func (s *Server) watchWrites(context.Context) {
	// Real time, as the write stamps are: the injected clock is business
	// time and may be pushed forward by tests.
	cutoff := time.Now().Add(-s.cfg.WriteTimeout).UnixNano()
	s.hub.each(func(c *conn) {
		if c.stalled(cutoff) {
			c.abort()
		}
	})
}

func (s *Server) every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}

// identify returns the user of a request: from its ticket, or from the
// X-User-Id header in trust mode; joinedAtMs is 0 when unknown.
func (s *Server) identify(r *http.Request, eventID string) (user string, joinedAtMs int64, err error) {
	if t := r.URL.Query().Get("ticket"); t != "" {
		tk, err := s.tickets.Verify(t, eventID, s.now())
		if err != nil {
			return "", 0, err
		}
		return tk.UserID, tk.JoinedAt, nil
	}
	if s.cfg.TrustUserHeader {
		if u := r.Header.Get(api.UserHeader); u != "" {
			if !queue.ValidUserID(u) {
				return "", 0, queue.Errorf(queue.CodeInvalidUserID, "user id must be 1-%d characters of [A-Za-z0-9._:@-]", queue.MaxUserIDLen)
			}
			return u, 0, nil
		}
	}
	return "", 0, queue.Errorf(queue.CodeMissingUserID, "a ticket is required (?ticket=…)")
}

// socket upgrades /queue-status/{eventId} and hands the socket to a
// goroutine of its own that serves it until it closes.
func (s *Server) socket(c echo.Context) error {
	select {
	case <-s.ready:
	default:
		return queue.Errorf(queue.CodeStoreUnavailable, "the gateway is starting")
	}
	r := c.Request()
	rec := &hijackRecorder{ResponseWriter: c.Response()}
	ws, err := websocket.Accept(rec, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.AllowedOrigins})
	if err != nil {
		s.metrics.refused.WithLabelValues("handshake").Inc()
		return nil // Accept answered (403 for a foreign origin, 426 for no upgrade)
	}
	ev := c.Param("eventId")
	refuse := func(code websocket.StatusCode, reason, label string) error {
		s.metrics.refused.WithLabelValues(label).Inc()
		_ = ws.Close(code, reason)
		return nil
	}
	if s.baseCtx.Err() != nil {
		return refuse(CloseShuttingDown, "server shutting down", "shutdown")
	}
	if !queue.ValidEventID(ev) {
		return refuse(CloseInvalidEvent, "invalid event id", "invalid_event")
	}
	user, joinedAt, err := s.identify(r, ev)
	if err != nil {
		return refuse(CloseBadIdentity, errorMessage(err), "identity")
	}
	_, err = s.events.Event(r.Context(), ev)
	switch {
	case errors.Is(err, queue.ErrEventNotFound):
		return refuse(CloseUnknownEvent, "unknown event", "unknown_event")
	case err != nil:
		s.log.Warn("event lookup failed", "event", ev, "err", err)
		return refuse(CloseInternal, "try again", "store")
	}
	cn := newConn(ws, ev, user, joinedAt, s.cfg.SendQueue)
	cn.raw = rec.conn
	cn.onDrop = func(code websocket.StatusCode) {
		if code == CloseTooSlow {
			s.metrics.slow.Inc()
		}
	}
	s.hub.add(cn)
	s.greet(cn)
	// The request's goroutine returns, and with it the stack the HTTP server
	// and the upgrade grew: a socket lives for minutes on a fresh one.
	go func() {
		defer s.hub.remove(cn)
		cn.run(context.WithoutCancel(s.baseCtx), s, s.cfg.WriteTimeout, s.cfg.PingInterval)
	}()
	return nil
}

// greet queues a new socket for its first status, sent within milliseconds:
// sockets that connect together share one Redis round trip per event.
func (s *Server) greet(c *conn) {
	s.greetMu.Lock()
	s.greeting = append(s.greeting, c)
	s.greetMu.Unlock()
	select {
	case s.greetSig <- struct{}{}:
	default:
	}
}

func (s *Server) greetLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.greetSig:
		}
		time.Sleep(5 * time.Millisecond) // let a burst of connects gather
		s.greetMu.Lock()
		batch := s.greeting
		s.greeting = nil
		s.greetMu.Unlock()
		groups := map[string][]*conn{}
		for _, c := range batch {
			groups[c.eventID] = append(groups[c.eventID], c)
		}
		s.pushAll(ctx, groups)
	}
}

// statusTick sends every socket its status.
func (s *Server) statusTick(ctx context.Context) {
	start := time.Now()
	s.pushAll(ctx, s.hub.byEvent())
	s.metrics.statusTick.Observe(time.Since(start).Seconds())
}

// pushAll reads each event's users in one round trip, a few events at a
// time, and queues their frames.
func (s *Server) pushAll(ctx context.Context, groups map[string][]*conn) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for ev, conns := range groups {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s.pushEvent(ctx, ev, conns)
		})
	}
	wg.Wait()
}

func (s *Server) pushEvent(ctx context.Context, ev string, conns []*conn) {
	index := make(map[string]int, len(conns))
	users := make([]string, 0, len(conns))
	for _, c := range conns {
		if _, ok := index[c.userID]; !ok {
			index[c.userID] = len(users)
			users = append(users, c.userID)
		}
	}
	nowMs := s.now().UnixMilli()
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StatusInterval)
	b, err := s.store.Status(rctx, ev, users, nowMs)
	cancel()
	s.metrics.roundTrips.Inc()
	if err != nil {
		s.metrics.statusErrors.Inc()
		s.log.Warn("status read failed", "event", ev, "users", len(users), "err", err)
		return
	}
	perSecond := s.rates.observe(ev, b.AdmittedTotal, nowMs)
	for _, c := range conns {
		s.deliver(c, b.Places[index[c.userID]], b.Total, perSecond, nowMs)
	}
}

// deliver queues c's status frame, and its admitted frame the first time the
// user is seen holding a slot.
func (s *Server) deliver(c *conn, p queue.Place, total int64, perSecond float64, nowMs int64) {
	st, pos := placeState(p, nowMs, c.history(), s.cfg.PendingWindow.Milliseconds())
	if st == StateWaiting || st == StateAdmitted {
		c.placed.Store(true)
	}
	if st == StateAdmitted {
		s.admit(c, p.HoldUntil)
	}
	if c.send(appendStatus(&StatusFrame{
		Type: "status", EventID: c.eventID, UserID: c.userID, State: st, Position: pos,
		Total: total, ETASeconds: etaSeconds(pos, perSecond), TS: nowMs,
	})) {
		s.metrics.frames.Inc()
	}
}

// admit sends c its admitted frame with a signed entry token, once.
func (s *Server) admit(c *conn, expiresAt int64) {
	if !c.admitted.CompareAndSwap(false, true) {
		return
	}
	token := s.entry.Sign(entry.Token{EventID: c.eventID, UserID: c.userID, Expires: expiresAt, IssuedAt: s.now().UnixMilli()})
	if c.send(encode(AdmittedFrame{Type: "admitted", EventID: c.eventID, UserID: c.userID, EntryToken: token, ExpiresAt: expiresAt})) {
		s.metrics.frames.Inc()
	}
}

// MonitorTick runs one slot-monitor round now (Run calls it every
// AdmitInterval): it sweeps users gone past the disconnect grace and admits
// from every event's line, all events in one round trip. Admitted users
// connected here hear of it at once, those on other gateways at their next
// status tick.
func (s *Server) MonitorTick(ctx context.Context) {
	start := time.Now()
	defer func() { s.metrics.admitTick.Observe(time.Since(start).Seconds()) }()
	tctx, cancel := context.WithTimeout(ctx, s.cfg.AdmitInterval)
	defer cancel()
	ids, err := s.store.EventIDs(tctx)
	if err != nil {
		s.log.Warn("slot monitor: listing events failed", "err", err)
		return
	}
	now := s.now()
	res, err := s.store.Tick(tctx, ids, now.UnixMilli(), s.cfg.AdmitBatch, now.Add(-s.cfg.DisconnectGrace).UnixMilli(), sweepLimit)
	if err != nil {
		s.log.Warn("slot monitor: tick failed", "events", len(ids), "err", err)
		return
	}
	s.metrics.holders.Reset()
	s.metrics.waiting.Reset()
	for _, r := range res {
		if !r.Unknown {
			s.metrics.holders.WithLabelValues(r.EventID).Set(float64(r.Holders))
			s.metrics.waiting.WithLabelValues(r.EventID).Set(float64(r.Waiting))
		}
		s.metrics.admitted.Add(float64(len(r.Admitted)))
		s.metrics.swept.Add(float64(len(r.Swept)))
		if len(r.Swept) > 0 {
			s.log.Info("removed users gone past the disconnect grace", "event", r.EventID, "users", len(r.Swept))
		}
		for _, u := range r.Admitted {
			for _, c := range s.hub.user(r.EventID, u) {
				s.admit(c, r.ExpiresAt)
			}
		}
	}
}

// leave publishes the user's leave through the join topic, so it cannot
// overtake the join.
func (s *Server) leave(ctx context.Context, c *conn) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m := queue.Message{V: queue.MessageVersion, Op: queue.OpLeave, EventID: c.eventID, UserID: c.userID, TS: s.now().UnixMilli(), ID: fmt.Sprintf("ws-%d", time.Now().UnixNano())}
	if err := s.pub.Publish(ctx, m); err != nil {
		s.log.Warn("publishing a leave failed", "event", c.eventID, "err", err)
		return queue.Errorf(queue.CodeBrokerUnavailable, "the leave could not be recorded; try again")
	}
	c.placed.Store(true) // from now on, absent from Redis means gone, not pending
	return nil
}

// release gives the user's slot back and sends the new status at once.
func (s *Server) release(ctx context.Context, c *conn) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.store.Release(ctx, c.eventID, c.userID, s.now().UnixMilli()); err != nil {
		s.log.Warn("release failed", "event", c.eventID, "err", err)
		return queue.Errorf(queue.CodeStoreUnavailable, "the slot could not be released; try again")
	}
	s.pushEvent(ctx, c.eventID, []*conn{c})
	return nil
}

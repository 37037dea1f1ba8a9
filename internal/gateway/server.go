package gateway

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/web"
	"github.com/waitq/waitq/pkg/entry"
)

// Config tunes the gateway. Zero values take DefaultConfig's; ws-gateway
// binds each setting to the WAITQ_ variable its comment names, and Validate
// names a bad setting by that variable.
type Config struct {
	// StatusInterval is how often each socket gets a status frame,
	// WAITQ_STATUS_INTERVAL.
	StatusInterval time.Duration
	// StatusSpread is the part of each interval a status round's slices
	// are spread over, WAITQ_STATUS_SPREAD; zero takes half of
	// StatusInterval.
	StatusSpread time.Duration
	// AdmitInterval is how often the slot monitor admits,
	// WAITQ_ADMIT_INTERVAL.
	AdmitInterval time.Duration
	// AdmitBatch is the most users one event admits per tick,
	// WAITQ_ADMIT_BATCH.
	AdmitBatch int
	// DisconnectGrace is how long a waiting user may be gone,
	// WAITQ_DISCONNECT_GRACE.
	DisconnectGrace time.Duration
	// TrustUserHeader accepts the X-User-Id header instead of a ticket,
	// from the TrustedProxies alone (which it needs), WAITQ_TRUST_USER_HEADER.
	TrustUserHeader bool
	// AllowedOrigins are the host patterns of browser origins allowed
	// besides the gateway's own host, WAITQ_ALLOWED_ORIGINS.
	AllowedOrigins []string
	// SendQueue is the frames waiting per socket, behind a write under way,
	// before it counts as too slow, WAITQ_WS_SEND_QUEUE.
	SendQueue int
	// WriteBuffer is the kernel send buffer per socket in bytes that the
	// program's listener sets (LimitWriteBuffer; 0: the system default),
	// WAITQ_WS_WRITE_BUFFER. New does not use it.
	WriteBuffer int
	// WriteTimeout is the longest one frame may take to write,
	// WAITQ_WS_WRITE_TIMEOUT.
	WriteTimeout time.Duration
	// PingInterval is how often idle sockets are pinged,
	// WAITQ_WS_PING_INTERVAL.
	PingInterval time.Duration
	// PendingWindow is how long after a join (the ticket's stamp) a user not
	// yet in Redis is "pending" rather than "not_queued".
	PendingWindow time.Duration
	MaxBodyBytes  int64
	// ProducerURL is producer-api's public base URL, for the waiting-room
	// page's joins; empty when both share the page's origin,
	// WAITQ_PRODUCER_URL.
	ProducerURL string
	// StatusLimit bounds status polls per client IP (zero: no limit),
	// WAITQ_RATE and WAITQ_RATE_BURST.
	StatusLimit httpkit.RateLimit
	// ConnectLimit bounds WebSocket connects and SSE streams opened per
	// client IP, answered 429 before the upgrade (zero: no limit),
	// WAITQ_CONNECT_RATE and WAITQ_CONNECT_BURST.
	ConnectLimit httpkit.RateLimit
	// FrameLimit bounds the frames one socket's client may send (zero: no
	// limit): an excess frame is answered with a rate_limited error frame
	// and not acted on, and maxFrameStrikes of them in a row close the
	// socket with 1008. WAITQ_WS_FRAME_RATE and WAITQ_WS_FRAME_BURST.
	FrameLimit httpkit.RateLimit
	// HoldLimit bounds the buyer's calls (hold, give back, release, verify)
	// per client IP, as producer-api's joins are bounded (zero: no limit),
	// WAITQ_HOLD_RATE and WAITQ_HOLD_BURST. The shop's sales (confirm, the
	// undo of a sale) bear its credential and are not counted.
	HoldLimit httpkit.RateLimit
	// PublicURL is the gateway's public base URL (such as
	// https://queue.example.com), the iss of its entry tokens and what
	// their verifiers check it against, and the base of the resume links
	// its mails carry (the page is served at its /), WAITQ_PUBLIC_URL;
	// empty: entry.DefaultIssuer ("waitq"), and no mail.
	PublicURL string
	// TrustedProxies are the proxies (CIDRs or addresses) whose
	// X-Forwarded-For names the client (empty: the direct peer),
	// WAITQ_TRUSTED_PROXIES.
	TrustedProxies []string
}

// DefaultConfig returns the defaults of every setting: the values ws-gateway
// runs with when nothing is configured.
func DefaultConfig() Config {
	return Config{
		StatusInterval:  5 * time.Second,
		AdmitInterval:   5 * time.Second,
		AdmitBatch:      queue.DefaultAdmitBatch,
		DisconnectGrace: 30 * time.Second,
		SendQueue:       16,
		WriteBuffer:     DefaultWriteBuffer,
		WriteTimeout:    5 * time.Second,
		PingInterval:    30 * time.Second,
		PendingWindow:   2 * time.Minute,
		MaxBodyBytes:    httpkit.DefaultMaxBodyBytes,
		StatusLimit:     httpkit.RateLimit{PerSecond: 5, Burst: 20},
		ConnectLimit:    httpkit.RateLimit{PerSecond: 10, Burst: 100},
		FrameLimit:      httpkit.RateLimit{PerSecond: 1, Burst: 5},
		HoldLimit:       httpkit.RateLimit{PerSecond: 10, Burst: 30},
	}
}

// withDefaults fills the zero settings of c from DefaultConfig. A zero
// StatusLimit, ConnectLimit, FrameLimit or HoldLimit stays zero: no limit; a zero
// WriteBuffer stays zero: the system default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.StatusInterval = cmp.Or(c.StatusInterval, d.StatusInterval)
	c.StatusSpread = cmp.Or(c.StatusSpread, c.StatusInterval/2)
	c.AdmitInterval = cmp.Or(c.AdmitInterval, d.AdmitInterval)
	c.DisconnectGrace = cmp.Or(c.DisconnectGrace, d.DisconnectGrace)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, d.WriteTimeout)
	c.PingInterval = cmp.Or(c.PingInterval, d.PingInterval)
	c.PendingWindow = cmp.Or(c.PendingWindow, d.PendingWindow)
	c.AdmitBatch = cmp.Or(c.AdmitBatch, d.AdmitBatch)
	c.SendQueue = cmp.Or(c.SendQueue, d.SendQueue)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, d.MaxBodyBytes)
	return c
}

// Validate reports every setting of c that cannot work, each named by its
// WAITQ_ variable.
func (c Config) Validate() error {
	var errs []error
	for name, d := range map[string]time.Duration{
		"WAITQ_STATUS_INTERVAL": c.StatusInterval, "WAITQ_ADMIT_INTERVAL": c.AdmitInterval,
		"WAITQ_WS_WRITE_TIMEOUT": c.WriteTimeout, "WAITQ_WS_PING_INTERVAL": c.PingInterval,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
	}
	if c.StatusSpread < 0 || c.StatusSpread >= c.StatusInterval {
		errs = append(errs, errors.New("WAITQ_STATUS_SPREAD must be at least 0 and shorter than WAITQ_STATUS_INTERVAL"))
	}
	// Presence is refreshed on every status round: the grace must outlast a
	// couple of them or connected users would be swept.
	if c.DisconnectGrace < 2*c.StatusInterval {
		errs = append(errs, errors.New("WAITQ_DISCONNECT_GRACE must be at least twice WAITQ_STATUS_INTERVAL"))
	}
	if c.AdmitBatch < 1 || c.AdmitBatch > 100_000 {
		errs = append(errs, errors.New("WAITQ_ADMIT_BATCH must be between 1 and 100000"))
	}
	if c.WriteBuffer < 0 {
		errs = append(errs, errors.New("WAITQ_WS_WRITE_BUFFER must not be negative"))
	}
	if c.SendQueue < 1 || c.SendQueue > 4096 {
		errs = append(errs, errors.New("WAITQ_WS_SEND_QUEUE must be between 1 and 4096"))
	}
	if u, err := url.Parse(c.PublicURL); c.PublicURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		errs = append(errs, fmt.Errorf("WAITQ_PUBLIC_URL %q must be an absolute http(s) URL", c.PublicURL))
	}
	if c.PendingWindow < 0 || c.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("gateway: pending window %s and body limit %d must not be negative", c.PendingWindow, c.MaxBodyBytes))
	}
	return errors.Join(append(errs,
		c.StatusLimit.Validate("WAITQ_RATE", "WAITQ_RATE_BURST"),
		c.ConnectLimit.Validate("WAITQ_CONNECT_RATE", "WAITQ_CONNECT_BURST"),
		c.FrameLimit.Validate("WAITQ_WS_FRAME_RATE", "WAITQ_WS_FRAME_BURST"),
		c.HoldLimit.Validate("WAITQ_HOLD_RATE", "WAITQ_HOLD_BURST"),
		httpkit.ValidateProxies("WAITQ_TRUSTED_PROXIES", c.TrustedProxies),
		httpkit.ValidateTrustUserHeader(c.TrustUserHeader, c.TrustedProxies))...)
}

// Deps are the parts a Server talks to.
type Deps struct {
	Store     queue.GatewayStore
	Publisher queue.Publisher // carries leaves through the join topic
	Tickets   *queue.TicketSigner
	Entry     *entry.Keyring // signs entry tokens; verifies them with older keys too
	// Mails finds the mails of being called due after each tick, and Mailer
	// sends them (mails.go); both nil: no mail. A Mailer needs
	// Config.PublicURL, the base of the links.
	Mails    queue.MailStore
	Mailer   Mailer
	Logger   *slog.Logger
	Registry *prometheus.Registry
	Now      func() time.Time
}

// Server is ws-gateway.
type Server struct {
	cfg     Config
	store   queue.GatewayStore
	events  *queue.EventCache // whether an event exists, at connect and poll
	pub     queue.Publisher
	tickets *queue.TicketSigner
	entry   *entry.Keyring
	mails   queue.MailStore
	mailer  Mailer
	// proxies are Config.TrustedProxies: X-User-Id is believed from them.
	proxies *httpkit.ClientIPs
	log     *slog.Logger
	now     func() time.Time
	hub     *hub
	tracker *tracker // the status rounds' reads: places kept from the line's journal
	writers *writers
	onSlow  func() // counts a conn closed as too slow; one func value for every conn

	rates   *rates
	metrics *metrics
	holds   *holdMetrics
	e       *echo.Echo

	baseCtx context.Context // ends when Run ends; sockets live under it
	ready   chan struct{}

	// openings is the next drop opening, when the monitor ticks once more.
	openings *openings
	// claims pokes the monitor when a called user came back: their claim
	// is admitted by the next tick, run at once (monitorLoop).
	claims chan struct{}
	// pokedAt is when pokeClaims last asked for a tick (unix ms, wall).
	pokedAt atomic.Int64
	// sampled is the series period (unix ms) the slot monitor last
	// sampled: the next sample is due at the next period (seriesDue).
	sampled atomic.Int64

	greetMu  sync.Mutex
	greeting []*conn
	greetSig chan struct{}
}

// New returns a Server with its routes, or an error when cfg (its zero
// settings taking DefaultConfig's) is not valid. Call Run to start its
// loops; sockets are refused until then.
func New(cfg Config, d Deps) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ips, err := httpkit.NewClientIPs(cfg.TrustedProxies)
	if err != nil {
		return nil, err
	}
	d.Logger, d.Registry, d.Now = httpkit.RuntimeDefaults(d.Logger, d.Registry, d.Now)
	if d.Mailer != nil && cfg.PublicURL == "" {
		return nil, errors.New("WAITQ_PUBLIC_URL is required to mail (the base of the resume links)")
	}
	if d.Entry == nil {
		// Tokens of an ephemeral key verify only here: fine for a single
		// gateway in tests, never what the app wires.
		var seed [32]byte
		_, _ = rand.Read(seed[:])
		d.Entry, _ = entry.NewKeyring("ephemeral", seed[:], nil)
	}
	s := &Server{
		cfg: cfg, store: d.Store, pub: d.Publisher, tickets: d.Tickets, mails: d.Mails, mailer: d.Mailer, entry: d.Entry.WithIssuer(cfg.PublicURL), proxies: ips, log: d.Logger, now: d.Now,
		hub: newHub(), tracker: newTracker(d.Store), rates: newRates(), ready: make(chan struct{}), greetSig: make(chan struct{}, 1),
		openings: newOpenings(),
		claims:   make(chan struct{}, 1),
		// A burst of connects at the start of a sale costs Redis one lookup
		// a second per event, not one per socket.
		events: queue.NewEventCache(d.Store, time.Second, d.Now),
	}
	s.metrics = newMetrics(d.Registry, s.hub, s.tracker)
	s.holds = newHoldMetrics(d.Registry)
	s.writers = newWriters(cfg.SendQueue, s.metrics.frames.Inc)
	s.onSlow = s.metrics.slow.Inc
	e := httpkit.NewEcho(httpkit.BaseOptions{Logger: d.Logger, Registry: d.Registry, MaxBodyBytes: cfg.MaxBodyBytes, Ready: httpkit.StoreAndBrokerReady(d.Store, d.Publisher), OpenAPI: OpenAPI})
	// One budget per address for sockets and streams alike.
	connectLimit := httpkit.Limit(cfg.ConnectLimit, ips, d.Now)
	e.GET("/queue-status/:eventId", s.socket, connectLimit)
	e.GET("/v1/events/:eventId/stream", s.stream, connectLimit)
	e.OPTIONS("/v1/events/:eventId/stream", s.streamPreflight)
	e.GET("/v1/events/:eventId/status", s.pollStatus, httpkit.Limit(cfg.StatusLimit, ips, d.Now))
	// One budget per address for the buyer's calls, as for joins.
	holdLimit := httpkit.Limit(cfg.HoldLimit, ips, d.Now)
	e.POST("/v1/events/:eventId/release", s.releaseHTTP, holdLimit)
	e.GET("/v1/events/:eventId/released", s.released, httpkit.Limit(cfg.StatusLimit, ips, d.Now))
	e.POST("/v1/entry/verify", s.verifyEntry, holdLimit)
	e.POST("/v1/events/:eventId/arrivals", s.arrive, holdLimit)
	s.holdRoutes(e, httpkit.Limit(cfg.StatusLimit, ips, d.Now), holdLimit)
	e.GET("/.well-known/jwks.json", s.jwks)
	web.Register(e, web.Config{ProducerURL: cfg.ProducerURL, DefaultEvent: "demo"})
	s.e = e
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

// Echo returns the router, for listing routes.
func (s *Server) Echo() *echo.Echo { return s.e }

// Started is closed once Run has started: sockets and streams are taken from
// then on (before, 503 "the gateway is starting").
func (s *Server) Started() <-chan struct{} { return s.ready }

// Sockets returns the number of open sockets.
func (s *Server) Sockets() int { return s.hub.count() }

// Run runs the write workers, the status rounds, the greeter, the slot
// monitor (every AdmitInterval and at each drop opening), the listener of admissions and the write watchdog until ctx
// ends, then closes every socket with 1001.
func (s *Server) Run(ctx context.Context) error {
	s.baseCtx = ctx
	s.writers.run(ctx)
	close(s.ready)
	var wg sync.WaitGroup
	wg.Go(func() { s.statusLoop(ctx) })
	wg.Go(func() { s.monitorLoop(ctx) })
	wg.Go(func() { s.greetLoop(ctx) })
	wg.Go(func() { s.listenAdmissions(ctx) })
	wg.Go(func() { every(ctx, watchdogPeriod(s.cfg.WriteTimeout), s.watchWrites) })
	wg.Go(func() { every(ctx, time.Second, s.letGo) })
	wg.Wait()
	// Sockets live under a context shutdown does not cancel (a cancelled
	// read would drop them without a close frame): each is closed with
	// 1001, and Run waits a while for the close handshakes.
	s.hub.each(func(c *conn) { c.close(httpkit.CloseShuttingDown, "server shutting down") })
	deadline := time.Now().Add(s.cfg.WriteTimeout)
	for s.hub.count() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// The presences of the users whose sockets closed are let go now: their
	// disconnect grace runs from the shutdown, not from the last read.
	flush, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.letGo(flush)
	return nil
}

// disconnect unregisters c; when it was its user's last socket here, the
// user's presence is let go (tracker.Leave).
func (s *Server) disconnect(c *conn) {
	if s.hub.remove(c) {
		s.tracker.Leave(c.eventID, c.userID)
	}
}

// letGo lets go of the presences of users who left (tracker.Flush).
func (s *Server) letGo(ctx context.Context) {
	if err := s.tracker.Flush(ctx, s.now().UnixMilli()); err != nil {
		s.log.Warn("letting go of presences failed; tried again in a second", "err", err)
	}
}

// every calls f every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func(context.Context)) {
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

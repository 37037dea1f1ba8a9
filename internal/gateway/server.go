package gateway

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/web"
	"github.com/waitq/waitq/pkg/entry"
)

// Config tunes the gateway. Zero values take DefaultConfig's.
type Config struct {
	StatusInterval time.Duration // how often each socket gets a status frame
	// StatusSpread is the part of each interval a status round's slices
	// are spread over (negative: none, every slice at once); zero takes
	// half of StatusInterval.
	StatusSpread    time.Duration
	AdmitInterval   time.Duration // how often the slot monitor admits
	AdmitBatch      int           // the most users one event admits per monitor tick
	DisconnectGrace time.Duration // how long a waiting user may be gone
	// TrustUserHeader accepts the X-User-Id header instead of a ticket.
	TrustUserHeader bool
	// AllowedOrigins are the host patterns of browser origins allowed
	// besides the gateway's own host.
	AllowedOrigins []string
	SendQueue      int           // frames waiting per socket, behind a write under way, before it counts as too slow
	WriteTimeout   time.Duration // the longest one frame may take to write
	PingInterval   time.Duration
	// PendingWindow is how long after a join (the ticket's stamp) a user not
	// yet in Redis is "pending" rather than "not_queued".
	PendingWindow time.Duration
	MaxBodyBytes  int64
	// ProducerURL is producer-api's public base URL, for the waiting-room
	// page's joins; empty when both share the page's origin.
	ProducerURL string
	// StatusLimit bounds status polls per client IP (zero: no limit).
	StatusLimit httpkit.RateLimit
	// ConnectLimit bounds WebSocket connects and SSE streams opened per
	// client IP, answered 429 before the upgrade (zero: no limit).
	ConnectLimit httpkit.RateLimit
	// FrameLimit bounds the frames one socket's client may send (zero: no
	// limit): an excess frame is answered with a rate_limited error frame
	// and not acted on, and maxFrameStrikes of them in a row close the
	// socket with 1008.
	FrameLimit httpkit.RateLimit
	// ClientIPs finds client addresses behind trusted proxies (nil: the
	// direct peer).
	ClientIPs *httpkit.ClientIPs
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
		WriteTimeout:    5 * time.Second,
		PingInterval:    30 * time.Second,
		PendingWindow:   2 * time.Minute,
		MaxBodyBytes:    httpkit.DefaultMaxBodyBytes,
		StatusLimit:     httpkit.RateLimit{PerSecond: 5, Burst: 20},
		ConnectLimit:    httpkit.RateLimit{PerSecond: 10, Burst: 100},
		FrameLimit:      httpkit.RateLimit{PerSecond: 1, Burst: 5},
	}
}

// withDefaults fills the zero settings of c from DefaultConfig. A zero
// StatusLimit, ConnectLimit or FrameLimit stays zero: no limit.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	config.OrDefault(&c.StatusInterval, d.StatusInterval)
	switch {
	case c.StatusSpread == 0:
		c.StatusSpread = c.StatusInterval / 2
	case c.StatusSpread < 0:
		c.StatusSpread = 0
	}
	config.OrDefault(&c.AdmitInterval, d.AdmitInterval)
	config.OrDefault(&c.DisconnectGrace, d.DisconnectGrace)
	config.OrDefault(&c.WriteTimeout, d.WriteTimeout)
	config.OrDefault(&c.PingInterval, d.PingInterval)
	config.OrDefault(&c.PendingWindow, d.PendingWindow)
	config.OrDefault(&c.AdmitBatch, d.AdmitBatch)
	config.OrDefault(&c.SendQueue, d.SendQueue)
	config.OrDefault(&c.MaxBodyBytes, d.MaxBodyBytes)
	if c.ClientIPs == nil {
		c.ClientIPs = &httpkit.ClientIPs{}
	}
	return c
}

// Deps are the parts a Server talks to.
type Deps struct {
	Store     queue.GatewayStore
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
	store   queue.GatewayStore
	events  *queue.EventCache // whether an event exists, at connect and poll
	pub     queue.Publisher
	tickets *queue.TicketSigner
	entry   *entry.Keyring
	log     *slog.Logger
	now     func() time.Time
	hub     *hub
	writers *writers
	onSlow  func() // counts a conn closed as too slow; one func value for every conn

	rates   *rates
	metrics *metrics
	e       *echo.Echo

	baseCtx context.Context // ends when Run ends; sockets live under it
	ready   chan struct{}

	greetMu  sync.Mutex
	greeting []*conn
	greetSig chan struct{}
}

// New returns a Server with its routes. Call Run to start its loops; sockets
// are refused until then.
func New(cfg Config, d Deps) *Server {
	cfg = cfg.withDefaults()
	d.Logger, d.Registry, d.Now = httpkit.RuntimeDefaults(d.Logger, d.Registry, d.Now)
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
	s.writers = newWriters(cfg.SendQueue, s.metrics.frames.Inc)
	s.onSlow = s.metrics.slow.Inc
	e := httpkit.NewEcho(httpkit.BaseOptions{Logger: d.Logger, Registry: d.Registry, MaxBodyBytes: cfg.MaxBodyBytes, Ready: httpkit.StoreAndBrokerReady(d.Store, d.Publisher), OpenAPI: OpenAPI})
	// One budget per address for sockets and streams alike.
	connectLimit := httpkit.Limit(cfg.ConnectLimit, cfg.ClientIPs, d.Now)
	e.GET("/queue-status/:eventId", s.socket, connectLimit)
	e.GET("/v1/events/:eventId/stream", s.stream, connectLimit)
	e.OPTIONS("/v1/events/:eventId/stream", s.streamPreflight)
	e.GET("/v1/events/:eventId/status", s.pollStatus, httpkit.Limit(cfg.StatusLimit, cfg.ClientIPs, d.Now))
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

// Run runs the write workers, the status rounds, the greeter, the slot
// monitor, the listener of admissions and the write watchdog until ctx
// ends, then closes every socket with 1001.
func (s *Server) Run(ctx context.Context) error {
	s.baseCtx = ctx
	s.writers.run(ctx)
	close(s.ready)
	var wg sync.WaitGroup
	wg.Go(func() { s.statusLoop(ctx) })
	wg.Go(func() { every(ctx, s.cfg.AdmitInterval, s.MonitorTick) })
	wg.Go(func() { s.greetLoop(ctx) })
	wg.Go(func() { s.listenAdmissions(ctx) })
	wg.Go(func() { every(ctx, watchdogPeriod(s.cfg.WriteTimeout), s.watchWrites) })
	wg.Wait()
	// Sockets live under a context shutdown does not cancel (a cancelled
	// read would drop them without a close frame): each is closed with
	// 1001, and Run waits a while for the close handshakes.
	s.hub.each(func(c *conn) { c.close(httpkit.CloseShuttingDown, "server shutting down") })
	deadline := time.Now().Add(s.cfg.WriteTimeout)
	for s.hub.count() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return nil
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

package producer

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// Config tunes the producer API. Zero values take DefaultConfig's.
type Config struct {
	// AdminToken guards the admin routes; empty disables them (403).
	AdminToken string
	// TicketTTL is how long a ticket proves its holder's place.
	TicketTTL time.Duration
	// PublishTimeout bounds the wait for the broker's acknowledgement;
	// past it a join is answered 503 broker_unavailable.
	PublishTimeout time.Duration
	// MaxBodyBytes caps request bodies; larger ones get 413.
	MaxBodyBytes int64
	// EventCacheTTL is how long a looked-up event configuration is reused
	// before Redis is asked again.
	EventCacheTTL time.Duration
	// DefaultPartitions is used when an admin PUT names none.
	DefaultPartitions int
	// StatusPath is the gateway's WebSocket route prefix in statusUrl.
	StatusPath string
	// AllowedOrigins are the host patterns of browser origins (such as the
	// gateway's waiting-room page) allowed to call this API across origins.
	AllowedOrigins []string
	// JoinLimit bounds joins and leaves per client IP (zero: no limit).
	JoinLimit httpkit.RateLimit
	// ClientIPs finds client addresses behind trusted proxies (nil: the
	// direct peer).
	ClientIPs *httpkit.ClientIPs
}

// DefaultConfig returns the defaults of every setting: the values producer-api
// runs with when nothing is configured.
func DefaultConfig() Config {
	return Config{
		TicketTTL:         12 * time.Hour,
		PublishTimeout:    queue.DefaultPublishTimeout,
		MaxBodyBytes:      httpkit.DefaultMaxBodyBytes,
		EventCacheTTL:     time.Second,
		DefaultPartitions: 3,
		StatusPath:        "/queue-status/",
		JoinLimit:         httpkit.RateLimit{PerSecond: 10, Burst: 30},
	}
}

// withDefaults fills the zero settings of c from DefaultConfig. A zero
// JoinLimit stays zero: no limit.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	config.OrDefault(&c.TicketTTL, d.TicketTTL)
	config.OrDefault(&c.PublishTimeout, d.PublishTimeout)
	config.OrDefault(&c.MaxBodyBytes, d.MaxBodyBytes)
	config.OrDefault(&c.EventCacheTTL, d.EventCacheTTL)
	config.OrDefault(&c.DefaultPartitions, d.DefaultPartitions)
	if c.StatusPath == "" {
		c.StatusPath = d.StatusPath
	}
	if c.ClientIPs == nil {
		c.ClientIPs = &httpkit.ClientIPs{}
	}
	return c
}

// Deps are the parts a Server talks to.
type Deps struct {
	Store     queue.EventStore
	Topics    queue.Topics
	Publisher queue.Publisher
	Tickets   *queue.TicketSigner
	Logger    *slog.Logger
	// Registry receives the API's metrics and is served at /metrics.
	Registry *prometheus.Registry
	// Now is the clock (time.Now).
	Now func() time.Time
}

// Server is producer-api's HTTP handler.
type Server struct {
	cfg     Config
	store   queue.EventStore
	topics  queue.Topics
	pub     queue.Publisher
	tickets *queue.TicketSigner
	log     *slog.Logger
	now     func() time.Time
	events  *queue.EventCache
	metrics *metrics
	e       *echo.Echo
}

// New returns a Server with its routes.
func New(cfg Config, d Deps) *Server {
	cfg = cfg.withDefaults()
	d.Logger, d.Registry, d.Now = httpkit.RuntimeDefaults(d.Logger, d.Registry, d.Now)
	s := &Server{
		cfg: cfg, store: d.Store, topics: d.Topics, pub: d.Publisher, tickets: d.Tickets,
		log: d.Logger, now: d.Now,
		events:  queue.NewEventCache(d.Store, cfg.EventCacheTTL, d.Now),
		metrics: newMetrics(d.Registry),
	}
	if d.Store != nil {
		d.Registry.MustRegister(newEventCollector(d.Store, d.Now, d.Logger))
	}
	e := httpkit.NewEcho(httpkit.BaseOptions{Logger: d.Logger, Registry: d.Registry, MaxBodyBytes: cfg.MaxBodyBytes, Ready: httpkit.StoreAndBrokerReady(d.Store, d.Publisher), OpenAPI: OpenAPI})
	e.Use(middleware.CORSWithConfig(middleware.CORSConfig{
		AllowOriginFunc: func(origin string) (bool, error) { return httpkit.OriginAllowed(origin, cfg.AllowedOrigins), nil },
		AllowMethods:    []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete},
		AllowHeaders:    []string{httpkit.UserHeader, echo.HeaderContentType, echo.HeaderAuthorization},
		// A page on another origin reads when to try again (429, 503, and
		// 409 event_not_open before a drop's pre-queue).
		ExposeHeaders: []string{echo.HeaderRetryAfter},
	}))
	limit := httpkit.Limit(cfg.JoinLimit, cfg.ClientIPs, d.Now)
	e.POST("/v1/events/:eventId/queue", s.join, limit)
	e.DELETE("/v1/events/:eventId/queue", s.leave, limit)
	e.GET("/v1/events/:eventId", s.publicEvent, limit)

	// Health reports take the admin token or the event's own report token.
	e.POST("/v1/admin/events/:eventId/health", s.reportHealth)
	admin := e.Group("/v1/admin", s.requireAdmin)
	admin.GET("/events", s.listEvents)
	admin.PUT("/events/:eventId", s.putEvent)
	admin.GET("/events/:eventId", s.getEvent)
	admin.DELETE("/events/:eventId", s.deleteEvent)
	admin.GET("/events/:eventId/draw", s.exportDraw)
	s.e = e
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

// Echo returns the router, for listing routes.
func (s *Server) Echo() *echo.Echo { return s.e }

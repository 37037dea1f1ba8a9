package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/waitq/waitq/pkg/queue"
)

// Config tunes the producer API. Zero values take the defaults noted.
type Config struct {
	// AdminToken guards the admin routes; empty disables them (403).
	AdminToken string
	// TicketTTL is how long a ticket proves its holder's place (12 h).
	TicketTTL time.Duration
	// PublishTimeout bounds the wait for the broker's acknowledgement (3 s);
	// past it a join is answered 503 broker_unavailable.
	PublishTimeout time.Duration
	// MaxBodyBytes caps request bodies (4 KiB); larger ones get 413.
	MaxBodyBytes int64
	// EventCacheTTL is how long a looked-up event configuration is reused
	// before Redis is asked again (1 s).
	EventCacheTTL time.Duration
	// DefaultPartitions is used when an admin PUT names none (3).
	DefaultPartitions int
	// StatusPath is the gateway's WebSocket route prefix in statusUrl.
	StatusPath string
}

func (c *Config) defaults() {
	if c.TicketTTL <= 0 {
		c.TicketTTL = 12 * time.Hour
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = 3 * time.Second
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 4 << 10
	}
	if c.EventCacheTTL <= 0 {
		c.EventCacheTTL = time.Second
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 3
	}
	if c.StatusPath == "" {
		c.StatusPath = "/queue-status/"
	}
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
	events  *eventCache
	metrics *metrics
	e       *echo.Echo
}

// New returns a Server with its routes.
func New(cfg Config, d Deps) *Server {
	cfg.defaults()
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	s := &Server{
		cfg: cfg, store: d.Store, topics: d.Topics, pub: d.Publisher, tickets: d.Tickets,
		log: d.Logger, now: d.Now,
		events:  newEventCache(d.Store, cfg.EventCacheTTL, d.Now),
		metrics: newMetrics(d.Registry),
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(s.requestLog, s.limitBody)

	e.POST("/v1/events/:eventId/queue", s.join)
	e.DELETE("/v1/events/:eventId/queue", s.leave)

	admin := e.Group("/v1/admin", s.requireAdmin)
	admin.GET("/events", s.listEvents)
	admin.PUT("/events/:eventId", s.putEvent)
	admin.GET("/events/:eventId", s.getEvent)
	admin.DELETE("/events/:eventId", s.deleteEvent)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{Registry: d.Registry})))
	s.e = e
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

// Echo returns the router, for listing routes.
func (s *Server) Echo() *echo.Echo { return s.e }

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when both Redis and a Kafka broker answer within a second.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		return queue.Errorf(queue.CodeStoreUnavailable, "redis is not reachable")
	}
	if err := s.pub.Ping(ctx); err != nil {
		return queue.Errorf(queue.CodeBrokerUnavailable, "no kafka broker is reachable")
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Server) requestLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if s.log.Enabled(c.Request().Context(), slog.LevelDebug) {
			if err != nil {
				c.Error(err)
				err = nil
			}
			s.log.Debug("request", "method", c.Request().Method, "path", c.Request().URL.Path,
				"status", c.Response().Status, "duration", time.Since(start))
		}
		return err
	}
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// limitBody refuses bodies over MaxBodyBytes: at once when Content-Length
// says so, else when a handler reads past the limit.
func (s *Server) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > s.cfg.MaxBodyBytes {
			return queue.Errorf(queue.CodeBodyTooLarge, "request body over %d bytes", s.cfg.MaxBodyBytes)
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, s.cfg.MaxBodyBytes)
		return next(c)
	}
}

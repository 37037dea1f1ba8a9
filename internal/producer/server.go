package producer

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/internal/challenge"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// Config tunes the producer API. Zero values take DefaultConfig's;
// producer-api binds each setting to the WAITQ_ variable its comment names,
// and Validate names a bad setting by that variable.
type Config struct {
	// AdminToken guards the admin routes; empty disables them (403),
	// WAITQ_ADMIN_TOKEN.
	AdminToken string
	// TicketTTL is how long a ticket proves its holder's place,
	// WAITQ_TICKET_TTL.
	TicketTTL time.Duration
	// PublishTimeout bounds the wait for the broker's acknowledgement;
	// past it a join is answered 503 broker_unavailable.
	// WAITQ_PUBLISH_TIMEOUT.
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
	// gateway's waiting-room page) allowed to call this API across origins,
	// WAITQ_ALLOWED_ORIGINS.
	AllowedOrigins []string
	// JoinLimit bounds joins and leaves per client IP (zero: no limit),
	// WAITQ_RATE and WAITQ_RATE_BURST.
	JoinLimit httpkit.RateLimit
	// TrustedProxies are the proxies (CIDRs or addresses) whose
	// X-Forwarded-For names the client (empty: the direct peer),
	// WAITQ_TRUSTED_PROXIES.
	TrustedProxies []string
	// TrustUserHeader takes the X-User-Id header as the user id of joins,
	// leaves and challenges, as set by an authenticating proxy in front,
	// one of the TrustedProxies (which it needs; from any other peer the
	// header is ignored). Off: a visitor identity or a join token names the
	// user. WAITQ_TRUST_USER_HEADER.
	TrustUserHeader bool
	// VisitorTTL is how long a visitor identity (the visitor cookie)
	// lasts, WAITQ_VISITOR_TTL.
	VisitorTTL time.Duration
	// CookieInsecure drops the visitor cookie's Secure attribute, for plain
	// HTTP on a developer's machine, WAITQ_COOKIE_INSECURE.
	CookieInsecure bool
	// ChallengeTTL is how long a proof-of-work challenge may be solved and
	// used, WAITQ_CHALLENGE_TTL.
	ChallengeTTL time.Duration
	// PublicURL is the waiting room page's public address (the gateway
	// that serves it, e.g. https://queue.example.com/), the base of resume
	// links; empty: the origin of the page that asks for the link,
	// WAITQ_PUBLIC_URL.
	PublicURL string
	// ResumeTTL is how long a resume link lasts for an event with no away
	// policy (one with it: away.keepSeconds), WAITQ_RESUME_TTL.
	ResumeTTL time.Duration
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
		VisitorTTL:        queue.DefaultVisitorTTL,
		ChallengeTTL:      5 * time.Minute,
		ResumeTTL:         10 * time.Minute,
	}
}

// withDefaults fills the zero settings of c from DefaultConfig. A zero
// JoinLimit stays zero: no limit.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.TicketTTL = cmp.Or(c.TicketTTL, d.TicketTTL)
	c.PublishTimeout = cmp.Or(c.PublishTimeout, d.PublishTimeout)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, d.MaxBodyBytes)
	c.EventCacheTTL = cmp.Or(c.EventCacheTTL, d.EventCacheTTL)
	c.DefaultPartitions = cmp.Or(c.DefaultPartitions, d.DefaultPartitions)
	c.StatusPath = cmp.Or(c.StatusPath, d.StatusPath)
	c.VisitorTTL = cmp.Or(c.VisitorTTL, d.VisitorTTL)
	c.ChallengeTTL = cmp.Or(c.ChallengeTTL, d.ChallengeTTL)
	c.ResumeTTL = cmp.Or(c.ResumeTTL, d.ResumeTTL)
	return c
}

// Validate reports every setting of c that cannot work, each named by its
// WAITQ_ variable.
func (c Config) Validate() error {
	var errs []error
	if c.TicketTTL <= 0 || c.PublishTimeout <= 0 {
		errs = append(errs, errors.New("WAITQ_PUBLISH_TIMEOUT and WAITQ_TICKET_TTL must be positive"))
	}
	if c.VisitorTTL < 0 || c.ChallengeTTL < 0 || c.ResumeTTL < 0 {
		errs = append(errs, errors.New("WAITQ_VISITOR_TTL, WAITQ_CHALLENGE_TTL and WAITQ_RESUME_TTL must not be negative"))
	}
	if u, err := url.Parse(c.PublicURL); c.PublicURL != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
		errs = append(errs, fmt.Errorf("WAITQ_PUBLIC_URL %q must be an absolute http(s) URL", c.PublicURL))
	}
	if c.MaxBodyBytes < 0 || c.EventCacheTTL < 0 || c.DefaultPartitions < 0 {
		errs = append(errs, fmt.Errorf("producer: body limit %d, event cache TTL %s and default partitions %d must not be negative", c.MaxBodyBytes, c.EventCacheTTL, c.DefaultPartitions))
	}
	return errors.Join(append(errs,
		c.JoinLimit.Validate("WAITQ_RATE", "WAITQ_RATE_BURST"),
		httpkit.ValidateProxies("WAITQ_TRUSTED_PROXIES", c.TrustedProxies),
		httpkit.ValidateTrustUserHeader(c.TrustUserHeader, c.TrustedProxies))...)
}

// Deps are the parts a Server talks to.
type Deps struct {
	Store     queue.EventStore
	Topics    queue.Topics
	Publisher queue.Publisher
	Tickets   *queue.TicketSigner
	// Resumes moves places by resume links (nil: Store, when it is one).
	Resumes queue.ResumeStore
	// Door keeps spent one-time proofs and the door's counters (nil: Store,
	// when it is one).
	Door queue.DoorStore
	// Addresses keeps the addresses left to be called by mail (nil:
	// Store, when it is one).
	Addresses queue.AddressStore
	// Reports reads the fairness reports (nil: Store, when it is one).
	Reports queue.ReportStore
	// Challenges issues and verifies proof-of-work challenges (nil: an
	// issuer with a random key, good for one replica only).
	Challenges *challenge.Issuer
	Logger     *slog.Logger
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
	// proxies are Config.TrustedProxies: X-User-Id is believed from them.
	proxies *httpkit.ClientIPs
	door    queue.DoorStore
	resumes queue.ResumeStore
	// addresses keeps the addresses left to be called by mail (notify.go).
	addresses queue.AddressStore
	// reports are the fairness reports, each read at most once a FairnessTTL.
	reports *reportCache
	// rates are the door's join rates, for the spend-time difficulty.
	rates *doorRates
	// challenges issues and verifies the events' proof-of-work challenges.
	challenges *challenge.Issuer
	log        *slog.Logger
	now        func() time.Time
	events     *queue.EventCache
	// chains keeps the chain draws made (drawchain.go).
	chains  *chainCache
	metrics *metrics
	e       *echo.Echo
}

// New returns a Server with its routes, or an error when cfg (its zero
// settings taking DefaultConfig's) is not valid.
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
	if err := d.findPorts(); err != nil {
		return nil, err
	}
	if d.Challenges == nil {
		if d.Challenges, err = challenge.NewIssuer([][]byte{queue.RandomKey()}, d.Now); err != nil {
			return nil, err
		}
	}
	s := &Server{
		cfg: cfg, store: d.Store, topics: d.Topics, pub: d.Publisher, tickets: d.Tickets, proxies: ips,
		door: d.Door, resumes: d.Resumes, addresses: d.Addresses, reports: newReportCache(d.Reports, d.Now), rates: newDoorRates(d.Door, cfg.EventCacheTTL), challenges: d.Challenges, log: d.Logger, now: d.Now,
		events:  queue.NewEventCache(d.Store, cfg.EventCacheTTL, d.Now),
		chains:  &chainCache{m: map[chainKey]*madeChain{}},
		metrics: newMetrics(d.Registry),
	}
	if d.Store != nil {
		d.Registry.MustRegister(newEventCollector(d.Store, d.Now, d.Logger))
	}
	e := httpkit.NewEcho(httpkit.BaseOptions{Logger: d.Logger, Registry: d.Registry, MaxBodyBytes: cfg.MaxBodyBytes,
		BodyLimits: map[string]int64{"/v1/admin/": max(cfg.MaxBodyBytes, AdminMaxBodyBytes)}, Ready: httpkit.StoreAndBrokerReady(d.Store, d.Publisher), OpenAPI: OpenAPI})
	e.Use(middleware.CORSWithConfig(middleware.CORSConfig{
		AllowOriginFunc: func(origin string) (bool, error) { return httpkit.OriginAllowed(origin, cfg.AllowedOrigins), nil },
		AllowMethods:    []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete},
		AllowHeaders:    []string{httpkit.UserHeader, JoinTokenHeader, JoinKeyHeader, echo.HeaderContentType, echo.HeaderAuthorization},
		// The page on the gateway's origin sends the visitor cookie.
		AllowCredentials: true,
		// A page on another origin reads when to try again (429, 503, and
		// 409 event_not_open before a drop's pre-queue).
		ExposeHeaders: []string{echo.HeaderRetryAfter},
	}))
	limit := httpkit.Limit(cfg.JoinLimit, ips, d.Now)
	e.POST("/v1/visitor", s.visitor, limit)
	e.POST("/v1/events/:eventId/challenge", s.issueChallenge, limit)
	e.POST("/v1/events/:eventId/queue", s.join, limit)
	e.DELETE("/v1/events/:eventId/queue", s.leave, limit)
	e.POST("/v1/events/:eventId/resume-link", s.resumeLink, limit)
	e.POST("/v1/events/:eventId/resume", s.resume, limit)
	e.GET("/v1/events/:eventId", s.publicEvent, limit)
	e.GET("/v1/events/:eventId/fairness", s.fairnessReport, limit)
	e.GET("/v1/events/:eventId/fairness/mine", s.admittedOrder, limit)
	e.GET("/v1/events/:eventId/draw", s.publicDraw, limit)
	e.GET("/v1/events/:eventId/draw/numbers", s.publicDrawNumbers, limit)
	e.GET("/v1/events/:eventId/draw/receipt", s.drawReceipt, limit)
	e.PUT("/v1/events/:eventId/notify", s.notify, limit)
	e.DELETE("/v1/events/:eventId/notify", s.unnotify, limit)

	// Health reports take the admin token or the event's own report token.
	e.POST("/v1/admin/events/:eventId/health", s.reportHealth)
	admin := e.Group("/v1/admin", s.requireAdmin)
	admin.GET("/events", s.listEvents)
	admin.PUT("/events/:eventId", s.putEvent)
	admin.GET("/events/:eventId", s.getEvent)
	admin.DELETE("/events/:eventId", s.deleteEvent)
	admin.GET("/events/:eventId/draw", s.exportDraw)
	admin.PUT("/events/:eventId/draw/public-value", s.supplyPublicValue)
	admin.GET("/events/:eventId/series", s.eventSeries)
	s.e = e
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

// Echo returns the router, for listing routes.
func (s *Server) Echo() *echo.Echo { return s.e }

// findPorts takes each port not given from the Store, when it is one, and
// fails when a store is given but a port the routes read is neither given
// nor found in it: a wrapper that hides one (as the recording store once
// hid the fairness reports) fails at start, not at a request. Without a
// store (the route listings) nothing is required.
func (d *Deps) findPorts() error {
	if d.Door == nil {
		d.Door, _ = d.Store.(queue.DoorStore)
	}
	if d.Resumes == nil {
		d.Resumes, _ = d.Store.(queue.ResumeStore)
	}
	if d.Addresses == nil {
		d.Addresses, _ = d.Store.(queue.AddressStore)
	}
	if d.Reports == nil {
		d.Reports, _ = d.Store.(queue.ReportStore)
	}
	if d.Store == nil {
		return nil
	}
	var missing []string
	for name, found := range map[string]bool{
		"Door": d.Door != nil, "Resumes": d.Resumes != nil, "Addresses": d.Addresses != nil, "Reports": d.Reports != nil,
	} {
		if !found {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("producer: the store has no %s port and none was given", strings.Join(missing, ", "))
	}
	return nil
}

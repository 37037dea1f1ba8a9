package guard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/entry"
)

// AdminPrefix is the path prefix of the guard's own routes: healthz, readyz,
// metrics and, with Config.ForwardAuth, auth. Requests under it never reach
// the origin.
const AdminPrefix = "/waitq-guard/"

// Headers the origin gets with a request the guard passed. The guard drops
// them from what clients send.
const (
	UserHeader    = "X-Waitq-User-Id"
	ExpiresHeader = "X-Waitq-Expires"
	// TokenHeader carries the entry token itself, only with
	// Config.ForwardToken: for an origin that calls ws-gateway with it
	// (seat holds, pkg/entry's Holds).
	TokenHeader = "X-Waitq-Token"
)

// KeyRefreshInterval is how often waitq-guard fetches the gateway's keys
// again, besides when a token names a key id it does not know: keys the
// gateway dropped stop verifying within it. It matches the JWKS's
// Cache-Control max-age.
const KeyRefreshInterval = 5 * time.Minute

// DefaultBypass are the paths forwarded without a token unless configured
// otherwise: static files, the favicon, the origin's health check.
var DefaultBypass = []string{"/static/", "/favicon.ico", "/robots.txt", "/healthz"}

// DefaultOriginTimeout is how long the guard waits for the origin's response
// headers unless configured otherwise.
const DefaultOriginTimeout = 30 * time.Second

// Config is what the guard protects and how: every setting of
// waitq-guard. Zero values take DefaultConfig's where New says so; the
// program binds each setting to the WAITQ_ variable its comment names, and
// Validate names a bad setting by that variable.
type Config struct {
	// OriginURL is the protected site (required): http(s)://host[:port][/base],
	// WAITQ_ORIGIN_URL.
	OriginURL string
	// EventID is the event whose entry tokens admit (required),
	// WAITQ_EVENT_ID.
	EventID string
	// WaitingRoomURL is the public URL of the waiting-room page (required),
	// WAITQ_WAITING_ROOM_URL.
	WaitingRoomURL string
	// GatewayURL is ws-gateway's base URL, for its keys and for releases on
	// DonePath (required unless JWKSURL is set and DonePath is not),
	// WAITQ_GATEWAY_URL.
	GatewayURL string
	// JWKSURL is where the entry-token keys are (empty: GatewayURL +
	// /.well-known/jwks.json; see KeysURL), WAITQ_JWKS_URL.
	JWKSURL string
	// Issuer, when set, is the iss every entry token must carry: the
	// gateway's WAITQ_PUBLIC_URL (empty: not checked), WAITQ_ENTRY_ISSUER.
	Issuer string
	// Protect are the paths that need a token (nil: every path, "/"),
	// WAITQ_PROTECT.
	Protect []string
	// Bypass are the paths forwarded without a token even when Protect
	// matches them (nil: none; the program's default is DefaultBypass),
	// WAITQ_BYPASS. A path that is not clean (with "..", "." or "//") is
	// always guarded.
	Bypass []string
	// DonePath, CookieName, CookiePath, CookieInsecure and
	// TrustForwardedProto are the entry.GuardConfig settings of the same
	// names: WAITQ_DONE_PATH, WAITQ_COOKIE_NAME, WAITQ_COOKIE_PATH,
	// WAITQ_COOKIE_INSECURE and WAITQ_TRUST_FORWARDED_PROTO.
	DonePath            string
	CookieName          string
	CookiePath          string
	CookieInsecure      bool
	TrustForwardedProto bool
	// ForwardToken hands the verified entry token to the origin in
	// TokenHeader, for a shop that holds seats with it (pkg/entry's Holds);
	// off, the origin never sees the token, WAITQ_FORWARD_TOKEN.
	ForwardToken bool
	// OriginTimeout is how long the guard waits for the origin's response
	// headers before it answers 504 (0: DefaultOriginTimeout),
	// WAITQ_ORIGIN_TIMEOUT. It applies to the transport NewTransport
	// makes, not to Deps.Transport.
	OriginTimeout time.Duration
	// HealthWindow is the span of the origin's health figures (0:
	// DefaultHealthWindow), WAITQ_HEALTH_WINDOW.
	HealthWindow time.Duration
	// Report is where and how often the program reports the origin's
	// health (ReportHealth; an empty URL: no reports; needs OriginURL).
	Report ReportConfig
	// ForwardAuth serves AuthPath, the forward-auth endpoint a proxy asks
	// before each request (auth.go); OriginURL is then optional,
	// WAITQ_FORWARD_AUTH.
	ForwardAuth bool
	// ReleasedInterval is how often the guard polls the gateway's released
	// admissions, whose tokens it refuses (0: never; the program's default
	// is DefaultReleasedInterval; needs GatewayURL), WAITQ_RELEASED_INTERVAL.
	ReleasedInterval time.Duration
	// TrustedProxies are the proxies (CIDRs or addresses) whose forwarded
	// headers AuthPath believes (required with ForwardAuth),
	// WAITQ_TRUSTED_PROXIES.
	TrustedProxies []string
	// ForwardedURIHeader names the one header AuthPath reads the request's
	// address from, the one the proxy sets (auth.go): ForwardedURIHeader
	// (default) or OriginalURIHeader, WAITQ_FORWARDED_URI_HEADER.
	ForwardedURIHeader string
}

// DefaultConfig returns the defaults of every setting: the values
// waitq-guard runs with when nothing is configured.
func DefaultConfig() Config {
	return Config{
		Protect:       []string{"/"},
		Bypass:        DefaultBypass,
		CookiePath:    "/",
		OriginTimeout: DefaultOriginTimeout,
		HealthWindow:  DefaultHealthWindow,
		Report:        ReportConfig{Interval: DefaultHealthInterval},
		// Caddy's and Traefik's forward auth set it themselves.
		ForwardedURIHeader: ForwardedURIHeader,
		// Set here, not by withDefaults: 0 turns the refusal list off.
		ReleasedInterval: entry.DefaultReleasedInterval,
	}
}

// withDefaults fills the zero settings of c from DefaultConfig; a nil
// Bypass, an empty CookiePath and an empty Report.Reporter stay as they are.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Protect == nil {
		c.Protect = d.Protect
	}
	c.OriginTimeout = cmp.Or(c.OriginTimeout, d.OriginTimeout)
	c.HealthWindow = cmp.Or(c.HealthWindow, d.HealthWindow)
	c.Report.Interval = cmp.Or(c.Report.Interval, d.Report.Interval)
	c.ForwardedURIHeader = cmp.Or(c.ForwardedURIHeader, d.ForwardedURIHeader)
	return c
}

// Validate reports every setting of c that cannot work, each named by its
// WAITQ_ variable.
func (c Config) Validate() error {
	var errs []error
	if !httpURL(c.OriginURL) && (c.OriginURL != "" || !c.ForwardAuth) {
		errs = append(errs, fmt.Errorf("WAITQ_ORIGIN_URL=%q must be an http(s) URL", c.OriginURL))
	}
	errs = append(errs, c.checkForwardAuth()...)
	if err := queue.CheckEventID(c.EventID); err != nil {
		errs = append(errs, fmt.Errorf("WAITQ_EVENT_ID=%q: %w", c.EventID, err))
	}
	if !httpURL(c.WaitingRoomURL) {
		errs = append(errs, fmt.Errorf("WAITQ_WAITING_ROOM_URL=%q must be an http(s) URL", c.WaitingRoomURL))
	}
	switch {
	case c.GatewayURL != "" && !httpURL(c.GatewayURL):
		errs = append(errs, fmt.Errorf("WAITQ_GATEWAY_URL=%q must be an http(s) URL", c.GatewayURL))
	case c.GatewayURL == "" && (c.JWKSURL == "" || c.DonePath != ""):
		errs = append(errs, errors.New("WAITQ_GATEWAY_URL is required for the keys (unless WAITQ_JWKS_URL is set) and for releases on WAITQ_DONE_PATH"))
	}
	if c.JWKSURL != "" && !httpURL(c.JWKSURL) {
		errs = append(errs, fmt.Errorf("WAITQ_JWKS_URL=%q must be an http(s) URL", c.JWKSURL))
	}
	if len(c.Protect) == 0 {
		errs = append(errs, errors.New("WAITQ_PROTECT names no path (/ protects every path)"))
	}
	if _, err := ParsePaths(c.Protect); err != nil {
		errs = append(errs, fmt.Errorf("WAITQ_PROTECT: %w", err))
	}
	if _, err := ParsePaths(c.Bypass); err != nil {
		errs = append(errs, fmt.Errorf("WAITQ_BYPASS: %w", err))
	}
	for name, p := range map[string]string{"WAITQ_DONE_PATH": c.DonePath, "WAITQ_COOKIE_PATH": c.CookiePath} {
		if p != "" && !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Errorf("%s=%q must start with /", name, p))
		}
	}
	if c.ReleasedInterval < 0 {
		errs = append(errs, fmt.Errorf("WAITQ_RELEASED_INTERVAL=%s must not be negative", c.ReleasedInterval))
	}
	if c.OriginTimeout <= 0 {
		errs = append(errs, fmt.Errorf("WAITQ_ORIGIN_TIMEOUT=%s must be positive", c.OriginTimeout))
	}
	errs = append(errs, c.Report.check()...)
	switch maxWindow := time.Duration(queue.MaxHealthWindowMs) * time.Millisecond; {
	case c.HealthWindow < c.Report.Interval:
		errs = append(errs, fmt.Errorf("WAITQ_HEALTH_WINDOW=%s must be at least WAITQ_HEALTH_INTERVAL=%s (each report covers the answers since the last one, at least)", c.HealthWindow, c.Report.Interval))
	case c.HealthWindow > maxWindow:
		errs = append(errs, fmt.Errorf("WAITQ_HEALTH_WINDOW=%s must be at most %s", c.HealthWindow, maxWindow))
	}
	return errors.Join(errs...)
}

// KeysURL returns where the gateway's keys are: JWKSURL, or GatewayURL's
// /.well-known/jwks.json.
func (c Config) KeysURL() string {
	if c.JWKSURL != "" {
		return c.JWKSURL
	}
	return strings.TrimRight(c.GatewayURL, "/") + "/.well-known/jwks.json"
}

// httpURL reports whether s is an absolute http(s) URL.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Deps are the guard's collaborators.
type Deps struct {
	// Keys verifies tokens (required).
	Keys *entry.KeySource
	// Transport reaches the origin (nil: NewTransport() with
	// Config.OriginTimeout as its ResponseHeaderTimeout).
	Transport http.RoundTripper
	// Client calls the gateway's release and producer-api's health route
	// (nil: a client with a 5 s timeout).
	Client *http.Client
	// Logger, Registry and Now: nil for discard, a fresh registry, the
	// real clock.
	Logger   *slog.Logger
	Registry *prometheus.Registry
	Now      func() time.Time
}

// Proxy is the reverse proxy with the guard in front.
type Proxy struct {
	eventID         string
	protect, bypass Paths
	guard           *entry.Guard
	guarded         http.Handler // the guard in front of the origin
	authorized      http.Handler // the guard in front of AuthPath's 204
	proxy           *httputil.ReverseProxy
	keys            *entry.KeySource
	released        *entry.ReleasedSource // nil: released tokens are not refused
	releasedEvery   time.Duration
	admin           *http.ServeMux
	m               *metrics
	log             *slog.Logger
	health          *HealthRecorder
	client          *http.Client
	proxies         *httpkit.ClientIPs // Config.TrustedProxies
	uriHeader       string             // Config.ForwardedURIHeader
	forwardToken    bool
}

// gatewayCalls sets gc's calls to ws-gateway: the release after the done
// path, and the arrival of each token that comes from the waiting room
// (with the event's report token, WAITQ_HEALTH_TOKEN), so that an event
// with an arrival window does not free the slot of someone in the shop.
func (g *Proxy) gatewayCalls(gc *entry.GuardConfig, cfg Config, client *http.Client) {
	if cfg.DonePath != "" {
		gc.Release = func(ctx context.Context, token string) error {
			held, err := entry.Release(ctx, client, cfg.GatewayURL, cfg.EventID, token)
			g.m.released(held, err)
			return err
		}
	}
	if cfg.GatewayURL != "" && cfg.Report.Token != "" {
		gc.Arrive = func(ctx context.Context, token string) error {
			_, err := entry.Arrive(ctx, client, cfg.GatewayURL, cfg.EventID, cfg.Report.Token, token)
			return err
		}
	}
}

// NewTransport returns the transport to the origin: http.DefaultTransport's
// settings, without proxies from the environment, and enough idle
// connections to keep one per busy client.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 1024
	return t
}

// New returns the guard of cfg, or an error when cfg (its zero settings
// taking DefaultConfig's) is not valid.
func New(cfg Config, deps Deps) (*Proxy, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	// Validate parsed them.
	origin, _ := url.Parse(cfg.OriginURL)
	protect, _ := ParsePaths(cfg.Protect)
	bypass, _ := ParsePaths(cfg.Bypass)
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	if deps.Transport == nil {
		t := NewTransport()
		t.ResponseHeaderTimeout = cfg.OriginTimeout
		deps.Transport = t
	}
	if deps.Client == nil {
		deps.Client = &http.Client{Timeout: entry.ReleaseTimeout}
	}
	g := &Proxy{
		eventID: cfg.EventID, protect: protect, bypass: bypass, keys: deps.Keys, log: deps.Logger,
		m: newMetrics(deps.Registry, cfg.EventID), health: NewHealthRecorder(cfg.HealthWindow), client: deps.Client,
		forwardToken: cfg.ForwardToken, uriHeader: http.CanonicalHeaderKey(cfg.ForwardedURIHeader),
	}
	g.proxies, _ = httpkit.NewClientIPs(cfg.TrustedProxies) // Validate checked them
	gc := entry.GuardConfig{
		EventID: cfg.EventID, WaitingRoomURL: cfg.WaitingRoomURL, Keys: deps.Keys,
		CookieName: cfg.CookieName, CookiePath: cfg.CookiePath, CookieInsecure: cfg.CookieInsecure,
		TrustForwardedProto: cfg.TrustForwardedProto, DonePath: cfg.DonePath,
		Observe: g.m.decided, Now: deps.Now, Logger: deps.Logger,
		Released: g.newReleased(cfg, deps.Client),
	}
	g.gatewayCalls(&gc, cfg, deps.Client)
	var err error
	if g.guard, err = entry.NewGuard(gc); err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(origin)
			pr.SetXForwarded()
			setIdentity(pr.Out.Header, pr.In, cfg.ForwardToken)
		},
		Transport:    deps.Transport,
		ErrorLog:     slog.NewLogLogger(deps.Logger.Handler(), slog.LevelWarn),
		ErrorHandler: g.originFailed,
	}
	g.guarded = g.guard.Handler(http.HandlerFunc(g.forwardAdmitted))
	g.authorized = g.guard.Handler(http.HandlerFunc(g.allow))
	g.admin = http.NewServeMux()
	g.admin.HandleFunc("GET "+AdminPrefix+"healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	g.admin.HandleFunc("GET "+AdminPrefix+"readyz", g.readyz)
	g.admin.Handle("GET "+AdminPrefix+"metrics", promhttp.HandlerFor(deps.Registry, promhttp.HandlerOpts{Registry: deps.Registry}))
	g.admin.HandleFunc("GET "+AdminPrefix+"openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(OpenAPI)
	})
	if cfg.ForwardAuth {
		g.admin.HandleFunc("GET "+AuthPath, g.serveAuth)
	}
	if cfg.OriginURL == "" {
		g.proxy = nil // forward authentication only
	}
	return g, nil
}

// Guard returns the proxy's guard (the entry.Guard rules in front of the origin).
func (g *Proxy) Guard() *entry.Guard { return g.guard }

// Wait waits for the releases still in flight; call it once the server
// stopped serving.
func (g *Proxy) Wait() { g.guard.Wait() }

// ServeHTTP routes r: the guard's own routes, bypassed paths straight to the
// origin, everything else through the guard.
func (g *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, AdminPrefix):
		g.admin.ServeHTTP(w, r)
	case g.proxy == nil:
		writeJSON(w, http.StatusNotFound, authError("no_origin", "this guard only answers "+AuthPath+" (WAITQ_ORIGIN_URL is not set)"))
	case g.guardedPath(p):
		g.guarded.ServeHTTP(w, r)
	default:
		g.m.bypassed.Inc()
		g.forward(w, r, false)
	}
}

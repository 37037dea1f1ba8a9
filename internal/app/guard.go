package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/entry"
)

// Guard is waitq-guard: a reverse proxy in front of a site that lets in only
// the visitors the waiting room admitted.
type Guard struct {
	Common
	OriginURL           string
	EventID             string
	WaitingRoomURL      string
	GatewayURL          string
	JWKSURL             string
	Protect             []string
	Bypass              []string
	DonePath            string
	CookieName          string
	CookiePath          string
	CookieInsecure      bool
	TrustForwardedProto bool
	OriginTimeout       time.Duration
	HealthURL           string
	HealthToken         string
	HealthInterval      time.Duration
	HealthWindow        time.Duration
	HealthReporter      string
}

var _ Service = (*Guard)(nil)

// Name implements Service.
func (*Guard) Name() string { return "waitq-guard" }

// Bind implements Service.
func (g *Guard) Bind(l *config.Loader) {
	g.Common.bind(l, ":8083")
	l.String(&g.OriginURL, "origin-url", "WAITQ_ORIGIN_URL", "", "the protected site admitted visitors are forwarded to, http(s)://host[:port][/base] (required)")
	l.String(&g.EventID, "event-id", "WAITQ_EVENT_ID", "", "the event whose entry tokens admit (required)")
	l.String(&g.WaitingRoomURL, "waiting-room-url", "WAITQ_WAITING_ROOM_URL", "", "public URL of the waiting-room page visitors without a valid token are sent to, with ?event=…&returnTo=… (required)")
	l.String(&g.GatewayURL, "gateway-url", "WAITQ_GATEWAY_URL", "", "ws-gateway's base URL, for its keys and releases (required unless WAITQ_JWKS_URL is set and WAITQ_DONE_PATH is not)")
	l.String(&g.JWKSURL, "jwks-url", "WAITQ_JWKS_URL", "", "URL of the entry-token keys (empty: WAITQ_GATEWAY_URL + /.well-known/jwks.json)")
	l.List(&g.Protect, "protect", "WAITQ_PROTECT", "/", "paths that need an entry token, comma-separated: /prefix/, /exact/path or a path.Match glob")
	l.List(&g.Bypass, "bypass", "WAITQ_BYPASS", strings.Join(guard.DefaultBypass, ","), "paths forwarded without a token even when WAITQ_PROTECT matches them, in the same forms")
	l.String(&g.DonePath, "done-path", "WAITQ_DONE_PATH", "", "path (such as /order) whose 2xx answer ends the visit: the slot is released and the cookie cleared (empty: none)")
	l.String(&g.CookieName, "cookie-name", "WAITQ_COOKIE_NAME", "", "cookie that holds the entry token (empty: waitq_entry_<event id>)")
	l.String(&g.CookiePath, "cookie-path", "WAITQ_COOKIE_PATH", "/", "the cookie's Path")
	l.Bool(&g.CookieInsecure, "cookie-insecure", "WAITQ_COOKIE_INSECURE", false, "drop the cookie's Secure attribute, for a plain-HTTP site on a developer's machine (never in production)")
	l.Bool(&g.TrustForwardedProto, "trust-forwarded-proto", "WAITQ_TRUST_FORWARDED_PROTO", false, "take the scheme of the returnTo URL from X-Forwarded-Proto (only behind a TLS-terminating proxy that sets it)")
	l.Duration(&g.OriginTimeout, "origin-timeout", "WAITQ_ORIGIN_TIMEOUT", guard.DefaultOriginTimeout, "longest wait for the origin's response headers; past it the visitor gets 504 and the health figures count an error")
	l.String(&g.HealthURL, "health-url", "WAITQ_HEALTH_URL", "", "producer-api's base URL, where the origin's health is reported (POST /v1/admin/events/<event id>/health; empty: no reports)")
	l.Secret(&g.HealthToken, "health-token", "WAITQ_HEALTH_TOKEN", "bearer token of the health reports: the admin token or the event's report token (required with WAITQ_HEALTH_URL)")
	l.Duration(&g.HealthInterval, "health-interval", "WAITQ_HEALTH_INTERVAL", guard.DefaultHealthInterval, "time between health reports")
	l.Duration(&g.HealthWindow, "health-window", "WAITQ_HEALTH_WINDOW", guard.DefaultHealthWindow, "span of the origin's answers each health report covers (at least WAITQ_HEALTH_INTERVAL)")
	l.String(&g.HealthReporter, "health-reporter", "WAITQ_HEALTH_REPORTER", "", "this guard's name among the event's reporters, 1 to 64 letters, digits or . _ : - (empty: <host name>-<process id>)")
}

// Validate implements Service.
func (g *Guard) Validate() error {
	var errs []error
	if !httpURL(g.OriginURL) {
		errs = append(errs, fmt.Errorf("WAITQ_ORIGIN_URL=%q must be an http(s) URL", g.OriginURL))
	}
	if err := queue.CheckEventID(g.EventID); err != nil {
		errs = append(errs, fmt.Errorf("WAITQ_EVENT_ID=%q: %w", g.EventID, err))
	}
	if !httpURL(g.WaitingRoomURL) {
		errs = append(errs, fmt.Errorf("WAITQ_WAITING_ROOM_URL=%q must be an http(s) URL", g.WaitingRoomURL))
	}
	switch {
	case g.GatewayURL != "" && !httpURL(g.GatewayURL):
		errs = append(errs, fmt.Errorf("WAITQ_GATEWAY_URL=%q must be an http(s) URL", g.GatewayURL))
	case g.GatewayURL == "" && (g.JWKSURL == "" || g.DonePath != ""):
		errs = append(errs, errors.New("WAITQ_GATEWAY_URL is required for the keys (unless WAITQ_JWKS_URL is set) and for releases on WAITQ_DONE_PATH"))
	}
	if g.JWKSURL != "" && !httpURL(g.JWKSURL) {
		errs = append(errs, fmt.Errorf("WAITQ_JWKS_URL=%q must be an http(s) URL", g.JWKSURL))
	}
	if len(g.Protect) == 0 {
		errs = append(errs, errors.New("WAITQ_PROTECT names no path (/ protects every path)"))
	}
	if _, err := guard.ParsePaths(g.Protect); err != nil {
		errs = append(errs, fmt.Errorf("WAITQ_PROTECT: %w", err))
	}
	if _, err := guard.ParsePaths(g.Bypass); err != nil {
		errs = append(errs, fmt.Errorf("WAITQ_BYPASS: %w", err))
	}
	for name, p := range map[string]string{"WAITQ_DONE_PATH": g.DonePath, "WAITQ_COOKIE_PATH": g.CookiePath} {
		if p != "" && !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Errorf("%s=%q must start with /", name, p))
		}
	}
	return errors.Join(append(errs, g.validateHealth()...)...)
}

// validateHealth checks the origin timeout and the health reports'
// settings.
func (g *Guard) validateHealth() []error {
	var errs []error
	if g.OriginTimeout <= 0 {
		errs = append(errs, fmt.Errorf("WAITQ_ORIGIN_TIMEOUT=%s must be positive", g.OriginTimeout))
	}
	if g.HealthURL != "" && !httpURL(g.HealthURL) {
		errs = append(errs, fmt.Errorf("WAITQ_HEALTH_URL=%q must be an http(s) URL (producer-api's base URL)", g.HealthURL))
	}
	if g.HealthURL != "" && g.HealthToken == "" {
		errs = append(errs, errors.New("WAITQ_HEALTH_TOKEN is required with WAITQ_HEALTH_URL (the admin token or the event's report token)"))
	}
	if g.HealthInterval <= 0 {
		errs = append(errs, fmt.Errorf("WAITQ_HEALTH_INTERVAL=%s must be positive", g.HealthInterval))
	}
	switch maxWindow := time.Duration(queue.MaxHealthWindowMs) * time.Millisecond; {
	case g.HealthWindow < g.HealthInterval:
		errs = append(errs, fmt.Errorf("WAITQ_HEALTH_WINDOW=%s must be at least WAITQ_HEALTH_INTERVAL=%s (each report covers the answers since the last one, at least)", g.HealthWindow, g.HealthInterval))
	case g.HealthWindow > maxWindow:
		errs = append(errs, fmt.Errorf("WAITQ_HEALTH_WINDOW=%s must be at most %s", g.HealthWindow, maxWindow))
	}
	if g.HealthReporter != "" && !queue.ValidReporter(g.HealthReporter) {
		errs = append(errs, fmt.Errorf("WAITQ_HEALTH_REPORTER=%q must be 1 to 64 letters, digits or . _ : -", g.HealthReporter))
	}
	return errs
}

// httpURL reports whether s is an absolute http(s) URL.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// jwksURL returns where the gateway's keys are.
func (g *Guard) jwksURL() string {
	if g.JWKSURL != "" {
		return g.JWKSURL
	}
	return strings.TrimRight(g.GatewayURL, "/") + "/.well-known/jwks.json"
}

// Run implements Service.
func (g *Guard) Run(ctx context.Context, log *slog.Logger) error {
	keys := entry.NewKeySource(entry.KeySourceConfig{URL: g.jwksURL()})
	if err := keys.Refresh(ctx); err != nil {
		// Not fatal: the gateway may start after the guard. Until the keys
		// come, /readyz fails and protected paths answer 503.
		log.Warn("the gateway's keys could not be fetched yet", "url", g.jwksURL(), "err", err)
	}
	gt, err := guard.New(guard.Config{
		OriginURL: g.OriginURL, EventID: g.EventID, WaitingRoomURL: g.WaitingRoomURL, GatewayURL: g.GatewayURL,
		Protect: g.Protect, Bypass: g.Bypass, DonePath: g.DonePath, CookieName: g.CookieName, CookiePath: g.CookiePath,
		CookieInsecure: g.CookieInsecure, TrustForwardedProto: g.TrustForwardedProto,
		OriginTimeout: g.OriginTimeout, HealthWindow: g.HealthWindow,
	}, guard.Deps{Keys: keys, Logger: log, Registry: newRegistry()})
	if err != nil {
		return err
	}
	defer gt.Wait() // releases still in flight after the last request
	eg, egctx := errgroup.WithContext(ctx)
	eg.Go(func() error {
		keys.Run(egctx, guard.KeyRefreshInterval, func(err error) {
			log.Warn("refreshing the gateway's keys failed; the last ones stay in use", "url", g.jwksURL(), "err", err)
		})
		return nil
	})
	if g.HealthURL == "" {
		log.Info("the origin's health is not reported: WAITQ_HEALTH_URL is empty")
	} else {
		eg.Go(func() error {
			return gt.ReportHealth(egctx, guard.ReportConfig{
				URL: g.HealthURL, Token: g.HealthToken, Reporter: g.HealthReporter, Interval: g.HealthInterval,
			})
		})
	}
	eg.Go(func() error { return serveHTTP(egctx, log, g.HTTPAddr, gt, g.ShutdownTimeout, nil) })
	return eg.Wait()
}

package app

import (
	"context"
	"log/slog"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/pkg/entry"
)

// Guard is waitq-guard: a reverse proxy in front of a site that lets in only
// the visitors the waiting room admitted.
type Guard struct {
	Common
	Config guard.Config
}

var _ Service = (*Guard)(nil)

// Name implements Service.
func (*Guard) Name() string { return "waitq-guard" }

// Bind implements Service.
func (g *Guard) Bind(l *config.Loader) {
	g.Config = guard.DefaultConfig()
	def, cfg := g.Config, &g.Config
	g.Common.bind(l, ":8083")
	l.String(&cfg.OriginURL, "origin-url", "WAITQ_ORIGIN_URL", "", "the protected site admitted visitors are forwarded to, http(s)://host[:port][/base] (required)")
	l.String(&cfg.EventID, "event-id", "WAITQ_EVENT_ID", "", "the event whose entry tokens admit (required)")
	l.String(&cfg.WaitingRoomURL, "waiting-room-url", "WAITQ_WAITING_ROOM_URL", "", "public URL of the waiting-room page visitors without a valid token are sent to, with ?event=…&returnTo=… (required)")
	l.String(&cfg.GatewayURL, "gateway-url", "WAITQ_GATEWAY_URL", "", "ws-gateway's base URL, for its keys and releases (required unless WAITQ_JWKS_URL is set and WAITQ_DONE_PATH is not)")
	l.String(&cfg.JWKSURL, "jwks-url", "WAITQ_JWKS_URL", "", "URL of the entry-token keys (empty: WAITQ_GATEWAY_URL + /.well-known/jwks.json)")
	l.String(&cfg.Issuer, "entry-issuer", "WAITQ_ENTRY_ISSUER", "", "the iss entry tokens must carry, the gateway's WAITQ_PUBLIC_URL (empty: not checked)")
	l.List(&cfg.Protect, "protect", "WAITQ_PROTECT", strings.Join(def.Protect, ","), "paths that need an entry token, comma-separated: /prefix/, /exact/path or a path.Match glob")
	l.List(&cfg.Bypass, "bypass", "WAITQ_BYPASS", strings.Join(def.Bypass, ","), "paths forwarded without a token even when WAITQ_PROTECT matches them, in the same forms")
	l.String(&cfg.DonePath, "done-path", "WAITQ_DONE_PATH", "", "path (such as /order) whose 2xx answer ends the visit: the slot is released and the cookie cleared (empty: none)")
	l.String(&cfg.CookieName, "cookie-name", "WAITQ_COOKIE_NAME", "", "cookie that holds the entry token (empty: waitq_entry_<event id>)")
	l.String(&cfg.CookiePath, "cookie-path", "WAITQ_COOKIE_PATH", def.CookiePath, "the cookie's Path")
	l.Bool(&cfg.CookieInsecure, "cookie-insecure", "WAITQ_COOKIE_INSECURE", false, "drop the cookie's Secure attribute, for a plain-HTTP site on a developer's machine (never in production)")
	l.Bool(&cfg.TrustForwardedProto, "trust-forwarded-proto", "WAITQ_TRUST_FORWARDED_PROTO", false, "take the scheme of the returnTo URL from X-Forwarded-Proto (only behind a TLS-terminating proxy that sets it)")
	l.Bool(&cfg.ForwardToken, "forward-token", "WAITQ_FORWARD_TOKEN", false, "hand the entry token to the origin in X-Waitq-Token, for a shop that holds seats with it (off: the origin never sees it)")
	l.Duration(&cfg.OriginTimeout, "origin-timeout", "WAITQ_ORIGIN_TIMEOUT", def.OriginTimeout, "longest wait for the origin's response headers; past it the visitor gets 504 and the health figures count an error")
	l.String(&cfg.Report.URL, "health-url", "WAITQ_HEALTH_URL", "", "producer-api's base URL, where the origin's health is reported (POST /v1/admin/events/<event id>/health; empty: no reports)")
	l.Secret(&cfg.Report.Token, "health-token", "WAITQ_HEALTH_TOKEN", "bearer token of the health reports: the admin token or the event's report token (required with WAITQ_HEALTH_URL); the event's report token also reports arrivals to WAITQ_GATEWAY_URL")
	l.Duration(&cfg.Report.Interval, "health-interval", "WAITQ_HEALTH_INTERVAL", def.Report.Interval, "time between health reports")
	l.Duration(&cfg.HealthWindow, "health-window", "WAITQ_HEALTH_WINDOW", def.HealthWindow, "span of the origin's answers each health report covers (at least WAITQ_HEALTH_INTERVAL)")
	l.Bool(&cfg.ForwardAuth, "forward-auth", "WAITQ_FORWARD_AUTH", false, "serve /waitq-guard/auth, the forward-auth endpoint of nginx auth_request, Caddy forward_auth or Traefik ForwardAuth (WAITQ_ORIGIN_URL then optional)")
	l.Duration(&cfg.ReleasedInterval, "released-interval", "WAITQ_RELEASED_INTERVAL", def.ReleasedInterval, "how often the released admissions are fetched from WAITQ_GATEWAY_URL, whose tokens are refused though they verify (0: never)")
	l.List(&cfg.TrustedProxies, "trusted-proxies", "WAITQ_TRUSTED_PROXIES", "", "proxies (CIDRs or addresses) whose X-Forwarded-* headers /waitq-guard/auth believes (required with WAITQ_FORWARD_AUTH)")
	l.String(&cfg.ForwardedURIHeader, "forwarded-uri-header", "WAITQ_FORWARDED_URI_HEADER", def.ForwardedURIHeader, "the one header /waitq-guard/auth reads the request's path and query from, the one the proxy sets: X-Forwarded-Uri (Caddy, Traefik, deploy/nginx) or X-Original-URI")
	l.String(&cfg.Report.Reporter, "health-reporter", "WAITQ_HEALTH_REPORTER", "", "this guard's name among the event's reporters, 1 to 64 letters, digits or . _ : - (empty: <host name>-<process id>)")
}

// Validate implements Service.
func (g *Guard) Validate() error { return g.Config.Validate() }

// Run implements Service.
func (g *Guard) Run(ctx context.Context, log *slog.Logger) error {
	keysURL := g.Config.KeysURL()
	// The operator names the gateway; inside a cluster that is plain http
	// to its service (compose, the Helm chart), so the guard takes it.
	keys := entry.NewKeySource(entry.KeySourceConfig{URL: keysURL, Issuer: g.Config.Issuer, AllowHTTP: true})
	if err := keys.Refresh(ctx); err != nil {
		// Not fatal: the gateway may start after the guard. Until the keys
		// come, /readyz fails and protected paths answer 503.
		log.Warn("the gateway's keys could not be fetched yet", "url", keysURL, "err", err)
	}
	gt, err := guard.New(g.Config, guard.Deps{Keys: keys, Logger: log, Registry: newRegistry()})
	if err != nil {
		return err
	}
	defer gt.Wait() // releases still in flight after the last request
	eg, egctx := errgroup.WithContext(ctx)
	eg.Go(func() error {
		keys.Run(egctx, guard.KeyRefreshInterval, func(err error) {
			log.Warn("refreshing the gateway's keys failed; the last ones stay in use", "url", keysURL, "err", err)
		})
		return nil
	})
	eg.Go(func() error { gt.RunReleased(egctx); return nil })
	if g.Config.Report.URL == "" {
		log.Info("the origin's health is not reported: WAITQ_HEALTH_URL is empty")
	} else {
		eg.Go(func() error { return gt.ReportHealth(egctx, g.Config.Report) })
	}
	eg.Go(func() error { return serveHTTP(egctx, log, g.HTTPAddr, gt, g.ShutdownTimeout, nil) })
	return eg.Wait()
}

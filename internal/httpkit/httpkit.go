// Package httpkit is what waitq's HTTP services share: the echo router with
// health, readiness, metrics and OpenAPI routes (NewEcho), the one table from
// domain error codes to HTTP statuses and the one table from domain error
// codes to WebSocket close codes (errors.go), strict JSON decoding, the
// per-client-IP rate limits with the client address found behind trusted
// proxies, and browser-origin matching. It holds no handler of its own
// services: producer-api's are in package producer, ws-gateway's in package
// gateway. Everything here is safe for concurrent use.
package httpkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/waitq/waitq/internal/queue"
)

// BaseOptions configure NewEcho.
type BaseOptions struct {
	Logger *slog.Logger
	// Registry receives the error counter and is served at /metrics.
	Registry *prometheus.Registry
	// MaxBodyBytes caps request bodies; larger ones get 413.
	MaxBodyBytes int64
	// BodyLimits caps the bodies of requests whose path starts with a key
	// at its value instead of MaxBodyBytes (an authenticated admin route
	// that takes more than a public one).
	BodyLimits map[string]int64
	// Ready reports whether the service's dependencies answer within the
	// context's deadline; its *queue.Error is the 503 body of /readyz.
	Ready func(ctx context.Context) error
	// ReadyFields, when set, adds fields beside "status" to the 200 body of
	// /readyz.
	ReadyFields func() map[string]any
	// OpenAPI is the service's OpenAPI document, served at /openapi.yaml
	// (nil: no such route).
	OpenAPI []byte
}

// DefaultMaxBodyBytes is the request body limit of every service (4 KiB):
// larger bodies get 413.
const DefaultMaxBodyBytes = 4 << 10

// UserHeader carries the user id set by the authenticating proxy in front.
const UserHeader = "X-User-Id"

// base is what every waitq HTTP service shares.
type base struct {
	log         *slog.Logger
	maxBody     int64
	limits      map[string]int64
	ready       func(context.Context) error
	readyFields func() map[string]any
	errors      *prometheus.CounterVec
}

// NewEcho returns a router with what every waitq HTTP service shares: the
// one error table, a request log line at debug, the body limit, and the
// /healthz, /readyz and /metrics routes.
func NewEcho(o BaseOptions) *echo.Echo {
	b := &base{log: o.Logger, maxBody: o.MaxBodyBytes, limits: o.BodyLimits, ready: o.Ready, readyFields: o.ReadyFields}
	b.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitq_http_errors_total",
		Help: "Error responses, by error code.",
	}, []string{"code"})
	o.Registry.MustRegister(b.errors)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = b.errorHandler
	e.Use(b.requestLog, b.limitBody)
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/readyz", b.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{Registry: o.Registry})))
	if o.OpenAPI != nil {
		e.GET("/openapi.yaml", func(c echo.Context) error {
			return c.Blob(http.StatusOK, "application/yaml", o.OpenAPI)
		})
	}
	return e
}

// readyz answers 200 when Ready returns nil within a second.
func (b *base) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), time.Second)
	defer cancel()
	if err := b.ready(ctx); err != nil {
		return err
	}
	body := map[string]any{}
	if b.readyFields != nil {
		body = b.readyFields()
	}
	body["status"] = "ready"
	return c.JSON(http.StatusOK, body)
}

func (b *base) requestLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if b.log.Enabled(c.Request().Context(), slog.LevelDebug) {
			if err != nil {
				c.Error(err)
				err = nil
			}
			b.log.Debug("request", "method", c.Request().Method, "path", c.Request().URL.Path,
				"status", c.Response().Status, "duration", time.Since(start))
		}
		return err
	}
}

// limitBody refuses bodies over the limit of their path: at once when
// Content-Length says so, else when a handler reads past it.
func (b *base) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		limit := b.maxBody
		for prefix, n := range b.limits {
			if strings.HasPrefix(r.URL.Path, prefix) {
				limit = n
			}
		}
		if r.ContentLength > limit {
			return queue.Errorf(queue.CodeBodyTooLarge, "request body over %d bytes", limit)
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
		return next(c)
	}
}

// DecodeJSON decodes exactly one JSON object from r into v, refusing unknown
// fields. A body over the limit is a body_too_large error; any other fault
// is an error with code, whose message says the body must be shape.
func DecodeJSON(r io.Reader, v any, code queue.Code, shape string) error {
	raw, err := io.ReadAll(r)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return queue.Errorf(queue.CodeBodyTooLarge, "request body over %d bytes", tooLarge.Limit)
	}
	if err != nil {
		return queue.Errorf(queue.CodeInvalidBody, "reading the body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return queue.Errorf(code, "body must be %s: %v", shape, err)
	}
	if dec.More() {
		return queue.Errorf(code, "body must hold one JSON object")
	}
	return nil
}

// Pinger is a dependency that can say whether it is reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}

// StoreAndBrokerReady is the readiness check of services that need Redis and
// Kafka: it fails with store_unavailable or broker_unavailable.
func StoreAndBrokerReady(store, broker Pinger) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := store.Ping(ctx); err != nil {
			return queue.ErrStoreUnavailable
		}
		if err := broker.Ping(ctx); err != nil {
			return queue.ErrBrokerUnavailable
		}
		return nil
	}
}

// OriginAllowed reports whether a browser Origin header matches one of the
// host patterns (path.Match syntax, such as "localhost:*"), as the gateway
// matches WebSocket origins.
func OriginAllowed(origin string, patterns []string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Host)
	for _, p := range patterns {
		if ok, _ := path.Match(strings.ToLower(p), host); ok {
			return true
		}
	}
	return false
}

// RuntimeDefaults fills what a service was not given: a logger that discards,
// a fresh metrics registry, and the real clock.
func RuntimeDefaults(log *slog.Logger, reg *prometheus.Registry, now func() time.Time) (*slog.Logger, *prometheus.Registry, func() time.Time) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if now == nil {
		now = time.Now
	}
	return log, reg, now
}

// StoreError logs err, a failed call to the live state, with what was being
// done, and returns the one error a client is answered with:
// queue.ErrStoreUnavailable (503 store_unavailable, or close 1011).
func StoreError(log *slog.Logger, what string, err error) error {
	log.Warn("store error", "what", what, "err", err)
	return queue.ErrStoreUnavailable
}

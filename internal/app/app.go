package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
)

// Service is one waitq program.
type Service interface {
	// Name is the program's name.
	Name() string
	// Bind declares the service's settings.
	Bind(l *config.Loader)
	// Validate checks the settings after parsing.
	Validate() error
	// Run serves until ctx ends, then shuts down gracefully.
	Run(ctx context.Context, log *slog.Logger) error
}

// Main runs svc with the process's arguments and environment until SIGINT or
// SIGTERM, and exits non-zero on error.
func Main(svc Service) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, svc, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", svc.Name(), err)
		os.Exit(1)
	}
}

// Run configures svc from args and getenv, logs to stdout and runs it.
func Run(ctx context.Context, svc Service, args []string, getenv func(string) string, stdout io.Writer) error {
	l, level, err := configure(svc, args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		l.Usage(stdout)
		return nil
	}
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: level})).With("service", svc.Name())
	log.Info("starting", l.LogAttrs()...)
	if p, ok := svc.(profiled); ok && p.pprofAddr() != "" {
		go func() {
			if err := serveHTTP(ctx, log.With("listener", "pprof"), p.pprofAddr(), pprofMux(), time.Second, nil); err != nil {
				log.Error("pprof listener stopped", "err", err)
			}
		}()
	}
	err = svc.Run(ctx, log)
	if err != nil {
		log.Error("stopped", "err", err)
	} else {
		log.Info("stopped")
	}
	return err
}

// RunWithEnv configures svc from env alone, as its program would be from
// the process environment (every setting env does not name keeps its
// default), and runs it with log until ctx ends. The devstack and the
// measurements start services in process this way.
func RunWithEnv(ctx context.Context, svc Service, env map[string]string, log *slog.Logger) error {
	if _, _, err := configure(svc, nil, func(k string) string { return env[k] }); err != nil {
		return fmt.Errorf("%s: %w", svc.Name(), err)
	}
	return svc.Run(ctx, log)
}

// configure binds svc's settings and the log level, parses args over
// getenv and validates the result. It returns flag.ErrHelp when asked for
// help.
func configure(svc Service, args []string, getenv func(string) string) (*config.Loader, slog.Level, error) {
	l := config.NewLoader(svc.Name(), getenv)
	svc.Bind(l)
	var level string
	var lv slog.Level
	l.String(&level, "log-level", "WAITQ_LOG_LEVEL", "info", "log level: debug, info, warn or error")
	if err := l.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return l, lv, err
		}
		return l, lv, fmt.Errorf("configuration: %w", err)
	}
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return l, lv, fmt.Errorf("configuration: WAITQ_LOG_LEVEL=%q: use debug, info, warn or error", level)
	}
	if err := svc.Validate(); err != nil {
		return l, lv, fmt.Errorf("configuration: %w", err)
	}
	return l, lv, nil
}

// Redis are the settings of services that reach the live state: one
// server by URL, or a Redis Cluster by its seed nodes (the URL then gives
// the scheme, credentials and client options every node shares).
type Redis struct {
	Conn redisstore.Conn
}

func (r *Redis) bind(l *config.Loader) {
	l.URL(&r.Conn.URL, "redis-url", "WAITQ_REDIS_URL", redisstore.DefaultURL, "Redis URL (logged with its password redacted)")
	l.List(&r.Conn.Cluster, "redis-cluster", "WAITQ_REDIS_CLUSTER", "", "seed nodes (host:port, comma-separated) of a Redis Cluster; WAITQ_REDIS_URL then gives only the scheme, user, password and options (empty: the one server of WAITQ_REDIS_URL)")
}

// validate names the two settings redisstore.Conn's Validate checks.
func (r *Redis) validate() error {
	if err := r.Conn.Validate(); err != nil {
		return fmt.Errorf("WAITQ_REDIS_URL / WAITQ_REDIS_CLUSTER: %w", err)
	}
	return nil
}

// open returns a Store with o on a new client of the settings; closing the
// Store closes the client.
func (r *Redis) open(o redisstore.Options) (*redisstore.Store, error) {
	rc, err := r.Conn.Client()
	if err != nil {
		return nil, err
	}
	s, err := redisstore.New(rc, o)
	if err != nil {
		_ = rc.Close()
		return nil, err
	}
	return s, nil
}

// FastTrack is the setting of services whose writes may admit: the ingest
// consumer (a join that finds room) and the gateway (a release).
type FastTrack struct {
	FastTrack bool
}

func (f *FastTrack) bind(l *config.Loader, what string) {
	l.Bool(&f.FastTrack, "fast-track", "WAITQ_FAST_TRACK", true, what+" admit the head of the line at once while there is room (false: only the slot monitor's tick admits)")
}

// batch is the store's fast track (redisstore.Options.FastTrack): the
// default admit batch when the fast track is on.
func (f *FastTrack) batch() int {
	if !f.FastTrack {
		return 0
	}
	return queue.DefaultAdmitBatch
}

// Common are the settings every service has.
type Common struct {
	HTTPAddr        string
	ShutdownTimeout time.Duration
	PprofAddr       string
}

func (c *Common) bind(l *config.Loader, defaultAddr string) {
	l.String(&c.HTTPAddr, "http-addr", "WAITQ_HTTP_ADDR", defaultAddr, "HTTP listen address")
	l.Duration(&c.ShutdownTimeout, "shutdown-timeout", "WAITQ_SHUTDOWN_TIMEOUT", 10*time.Second, "longest graceful shutdown")
	l.String(&c.PprofAddr, "pprof-addr", "WAITQ_PPROF_ADDR", "", "listen address of Go's /debug/pprof profiles, apart from the service's port (empty: off; keep it on loopback)")
}

// profiled is a service that may serve Go's profiles on a listener of their
// own.
type profiled interface{ pprofAddr() string }

func (c *Common) pprofAddr() string { return c.PprofAddr }

// pprofMux serves net/http/pprof's handlers.
func pprofMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// bindLimits binds the per-client-IP rate limit of a service facing
// clients into lim, and the proxies that name the client into proxies, with
// def, the service's default limit.
func bindLimits(l *config.Loader, what string, lim *httpkit.RateLimit, proxies *[]string, def httpkit.RateLimit) {
	l.Float(&lim.PerSecond, "rate", "WAITQ_RATE", def.PerSecond, what+" per second per client IP (0: no limit)")
	l.Int(&lim.Burst, "rate-burst", "WAITQ_RATE_BURST", def.Burst, what+" at once per client IP")
	l.List(proxies, "trusted-proxies", "WAITQ_TRUSTED_PROXIES", "", "proxies (CIDRs) whose X-Forwarded-For names the client (and whose X-User-Id names the user with WAITQ_TRUST_USER_HEADER); behind a proxy, set it or all clients share one limit")
}

// bindKafka binds the settings of services that reach the brokers into c.
func bindKafka(l *config.Loader, c *kafkajoin.BrokerConfig) {
	def := kafkajoin.DefaultBrokerConfig()
	l.List(&c.Brokers, "kafka-brokers", "WAITQ_KAFKA_BROKERS", strings.Join(def.Brokers, ","), "comma-separated Kafka bootstrap brokers")
	l.String(&c.TopicPrefix, "topic-prefix", "WAITQ_TOPIC_PREFIX", def.TopicPrefix, "prefix of the per-event join topics")
}

// serveHTTP serves h on addr until ctx ends, then drains it within timeout.
// wrap, when not nil, wraps the listener.
func serveHTTP(ctx context.Context, log *slog.Logger, addr string, h http.Handler, timeout time.Duration, wrap func(net.Listener) net.Listener) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown %s: %w", addr, err)
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/redisproc"
	"github.com/waitq/waitq/pkg/app"
)

// Bounds of the joins settings.
const (
	maxDuration    = 120 * time.Second
	maxRequests    = 5_000_000
	maxConcurrency = 1024
	benchEvent     = "bench"
)

// joinsConfig are the settings of "loadgen joins".
type joinsConfig struct {
	concurrency  int
	duration     time.Duration
	maxReqs      int64
	warmup       time.Duration
	producerURL  string
	adminToken   string
	batchTimeout string
}

// parseJoins reads the joins flags; it returns flag.ErrHelp for -h.
func parseJoins(args []string, stderr io.Writer) (joinsConfig, error) {
	var c joinsConfig
	fs := flag.NewFlagSet("loadgen joins", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.concurrency, "c", 64, "concurrent keep-alive HTTP clients")
	fs.DurationVar(&c.duration, "d", 10*time.Second, "duration of each measurement (at most 120s)")
	fs.Int64Var(&c.maxReqs, "n", 200_000, "most requests of each measurement")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "unrecorded warm-up before each measurement")
	fs.StringVar(&c.producerURL, "producer-url", "", "measure this running producer-api (loopback only) instead of starting one")
	fs.StringVar(&c.adminToken, "admin-token", "", "admin token of the producer-api named by -producer-url")
	fs.StringVar(&c.batchTimeout, "batch-timeout", "", "WAITQ_KAFKA_BATCH_TIMEOUT of the started producer-api (empty: the service default)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, c.validate()
}

func (c *joinsConfig) validate() error {
	var errs []error
	if c.concurrency < 1 || c.concurrency > maxConcurrency {
		errs = append(errs, fmt.Errorf("-c %d: must be between 1 and %d", c.concurrency, maxConcurrency))
	}
	if c.duration <= 0 || c.duration > maxDuration {
		errs = append(errs, fmt.Errorf("-d %s: must be positive and at most %s", c.duration, maxDuration))
	}
	if c.warmup < 0 || c.warmup > maxDuration {
		errs = append(errs, fmt.Errorf("-warmup %s: must be between 0 and %s", c.warmup, maxDuration))
	}
	if c.maxReqs < 1 || c.maxReqs > maxRequests {
		errs = append(errs, fmt.Errorf("-n %d: must be between 1 and %d", c.maxReqs, maxRequests))
	}
	if c.batchTimeout != "" {
		if _, err := time.ParseDuration(c.batchTimeout); err != nil {
			errs = append(errs, fmt.Errorf("-batch-timeout: %w", err))
		}
	}
	if c.producerURL != "" {
		if err := checkLoopbackURL(c.producerURL); err != nil {
			errs = append(errs, fmt.Errorf("-producer-url: %w", err))
		}
		if c.adminToken == "" {
			errs = append(errs, errors.New("-producer-url needs -admin-token to create the bench event"))
		}
		if c.batchTimeout != "" {
			errs = append(errs, errors.New("-batch-timeout applies only to the producer-api loadgen starts, not to -producer-url"))
		}
	}
	return errors.Join(errs...)
}

// checkLoopbackURL accepts only http URLs of this machine.
func checkLoopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "http" {
		return fmt.Errorf("%q: only http:// is supported", raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q: traffic must stay on this machine (127.0.0.1)", raw)
	}
	return nil
}

// runJoins measures joins/s through producer-api and through a bare echo
// handler with the same client, and prints both rows and their ratio.
func runJoins(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseJoins(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	printMachine(stdout, "joins")
	fmt.Fprintf(stdout, "settings -c %d -d %s -n %d -warmup %s\n", cfg.concurrency, cfg.duration, cfg.maxReqs, cfg.warmup)

	pt, err := producerBase(ctx, cfg, stdout, stderr)
	if err != nil {
		return err
	}
	defer pt.stop()
	if err := createBenchEvent(ctx, pt.base, pt.token); err != nil {
		return err
	}
	echoBase, stopEcho, err := startBareEcho()
	if err != nil {
		return err
	}
	defer stopEcho()

	lc := newLoadClient(cfg.concurrency)
	defer lc.Close()
	runID := app.RandomHex(3)
	// The bare handler is measured first so that nothing the producer left
	// behind (broker log, heap) weighs on it.
	echoRes, _, err := measureTarget(ctx, lc, cfg, target{"bare-echo", echoBase + "/v1/events/" + benchEvent + "/queue"}, "e"+runID, stderr)
	if err != nil {
		return err
	}
	prodRes, warmOK, err := measureTarget(ctx, lc, cfg, target{"producer-api", pt.base + "/v1/events/" + benchEvent + "/queue"}, "p"+runID, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	printJoinRow(stdout, &prodRes)
	printJoinRow(stdout, &echoRes)
	printRatio(stdout, "producer-api/bare-echo", prodRes.rate(), echoRes.rate())
	printErrors(stdout, &prodRes)
	printErrors(stdout, &echoRes)
	if len(pt.brokers) > 0 {
		printTopicCheck(ctx, stdout, pt.brokers, warmOK+prodRes.ok)
	}
	return nil
}

// measureTarget runs the warm-up and then the recorded measurement of t. It
// also returns the number of 202 answers of the warm-up.
func measureTarget(ctx context.Context, lc *loadClient, cfg joinsConfig, t target, prefix string, stderr io.Writer) (r result, warmOK int, err error) {
	lc.Close()
	if cfg.warmup > 0 {
		ph := phase{label: t.name + " warm-up", prefix: prefix + "w", duration: cfg.warmup, maxReqs: cfg.maxReqs, workers: cfg.concurrency}
		wr, err := measure(ctx, lc, t, ph, stderr)
		if err != nil {
			return result{}, 0, err
		}
		if n := wr.errors(); n > 0 {
			fmt.Fprintf(stderr, "  %s warm-up: %d errors, e.g. %s\n", t.name, n, firstSample(&wr))
		}
		warmOK = wr.ok
	}
	ph := phase{label: t.name, prefix: prefix + "m", duration: cfg.duration, maxReqs: cfg.maxReqs, workers: cfg.concurrency}
	r, err = measure(ctx, lc, t, ph, stderr)
	return r, warmOK, err
}

// producerTarget is the producer-api under measurement.
type producerTarget struct {
	base    string   // http://host:port
	token   string   // admin token
	brokers []string // its brokers when loadgen started them, else nil
	stop    func()
}

// producerBase returns the producer-api to measure, starting kfake,
// redis-server and producer-api unless cfg names a running one.
func producerBase(ctx context.Context, cfg joinsConfig, stdout, stderr io.Writer) (producerTarget, error) {
	if cfg.producerURL != "" {
		fmt.Fprintf(stdout, "target   %s (external)\n", cfg.producerURL)
		return producerTarget{base: strings.TrimRight(cfg.producerURL, "/"), token: cfg.adminToken, stop: func() {}}, nil
	}
	st, err := startStack(ctx)
	if err != nil {
		return producerTarget{}, err
	}
	token := app.RandomHex(16)
	base, stopProducer, err := startProducer(ctx, st, cfg.batchTimeout, token, stderr)
	if err != nil {
		st.Close()
		return producerTarget{}, err
	}
	bt := cfg.batchTimeout
	if bt == "" {
		bt = "service default"
	}
	fmt.Fprintf(stdout, "target   producer-api in-process, kfake in-process, redis-server %s child; kafka batch timeout: %s\n", redisVersion(ctx, st.redis.URL()), bt)
	return producerTarget{base: base, token: token, brokers: st.Brokers(), stop: func() { stopProducer(); st.Close() }}, nil
}

// startProducer runs producer-api in this process against st and waits until
// its /readyz answers 200. An empty batchTimeout keeps the service default.
func startProducer(ctx context.Context, st *stack, batchTimeout, adminToken string, stderr io.Writer) (base string, stop func(), err error) {
	port, err := redisproc.FreePort()
	if err != nil {
		return "", nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	env := map[string]string{
		"WAITQ_HTTP_ADDR":           addr,
		"WAITQ_KAFKA_BROKERS":       strings.Join(st.Brokers(), ","),
		"WAITQ_REDIS_URL":           st.redis.URL(),
		"WAITQ_TICKET_SECRET":       app.RandomHex(32),
		"WAITQ_ADMIN_TOKEN":         adminToken,
		"WAITQ_LOG_LEVEL":           "error",
		"WAITQ_SHUTDOWN_TIMEOUT":    "5s",
		"WAITQ_KAFKA_BATCH_TIMEOUT": batchTimeout,
		"WAITQ_RATE":                "0", // one client address sends every join
	}
	pctx, cancel := context.WithCancel(ctx)
	exited := make(chan struct{})
	var runErr error
	go func() {
		defer close(exited)
		runErr = app.Run(pctx, &app.Producer{}, nil, func(k string) string { return env[k] }, io.Discard)
	}()
	shutdown := func() error {
		cancel()
		select {
		case <-exited:
			return runErr
		case <-time.After(15 * time.Second):
			return errors.New("did not stop within 15s")
		}
	}
	base = "http://" + addr
	if err := waitReady(ctx, base+"/readyz", exited, 30*time.Second); err != nil {
		if serr := shutdown(); serr != nil {
			err = serr
		}
		return "", nil, fmt.Errorf("producer-api: %w", err)
	}
	stop = func() {
		if err := shutdown(); err != nil {
			fmt.Fprintf(stderr, "loadgen: producer-api: %v\n", err)
		}
	}
	return base, stop, nil
}

// waitReady polls url until it answers 200, the service exits, ctx ends or
// limit passes.
func waitReady(ctx context.Context, url string, exited <-chan struct{}, limit time.Duration) error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(limit)
	last := "no answer yet"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := c.Do(req); err != nil {
			last = err.Error()
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		}
		select {
		case <-exited:
			return errors.New("stopped before it was ready")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %s (last: %s)", url, limit, last)
		}
	}
}

// createBenchEvent creates (or keeps) the bench event through the admin API.
func createBenchEvent(ctx context.Context, base, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/v1/admin/events/"+benchEvent,
		strings.NewReader(`{"capacity":100,"partitions":6}`))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Transport: &http.Transport{Proxy: nil}}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("create event %s: %w", benchEvent, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("create event %s: %s: %s", benchEvent, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// echoAnswer is the bare handler's small JSON body.
type echoAnswer struct {
	EventID  string `json:"eventId"`
	UserID   string `json:"userId"`
	JoinedAt int64  `json:"joinedAt"`
}

// startBareEcho serves a plain echo v4 router whose join route answers 202
// with a small JSON body, on a free loopback port, and returns its base URL.
func startBareEcho() (base string, stop func(), err error) {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.POST("/v1/events/:eventId/queue", func(c echo.Context) error {
		return c.JSON(http.StatusAccepted, echoAnswer{
			EventID: c.Param("eventId"), UserID: c.Request().Header.Get("X-User-Id"), JoinedAt: time.Now().UnixMilli(),
		})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("bare echo: listen: %w", err)
	}
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	stop = func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}
	return "http://" + ln.Addr().String(), stop, nil
}

package loadgen

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/redisproc"
	"github.com/waitq/waitq/pkg/app"
	"github.com/waitq/waitq/pkg/kafkajoin"
	"github.com/waitq/waitq/pkg/queue"
)

// Bounds of the joins settings.
const (
	maxDuration    = 120 * time.Second
	maxRequests    = 5_000_000
	maxConcurrency = 1024
	benchEvent     = "bench"
	// benchPartitions is the partition count of the bench event's topic.
	benchPartitions = 6
	// writerPublishTimeout bounds one publish of the kafka-writer baseline,
	// as producer-api's default WAITQ_PUBLISH_TIMEOUT bounds one of its own.
	writerPublishTimeout = 3 * time.Second
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

// loadFlagErrors checks the -c and -d flags that joins and lag share.
func loadFlagErrors(concurrency int, duration time.Duration) []error {
	var errs []error
	if concurrency < 1 || concurrency > maxConcurrency {
		errs = append(errs, fmt.Errorf("-c %d: must be between 1 and %d", concurrency, maxConcurrency))
	}
	if duration <= 0 || duration > maxDuration {
		errs = append(errs, fmt.Errorf("-d %s: must be positive and at most %s", duration, maxDuration))
	}
	return errs
}

func (c *joinsConfig) validate() error {
	errs := loadFlagErrors(c.concurrency, c.duration)
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

// RunJoins measures joins/s through producer-api, through a bare echo handler
// with the same client and, when loadgen started the broker, straight into
// the broker with the service's Kafka writer from as many workers; it prints
// the rows and the ratios of producer-api to each baseline.
func RunJoins(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
	// The topic is counted before the writer baseline adds to it, so that
	// the check compares producer-api's messages with its own 202s.
	var check strings.Builder
	var writerRes result
	if len(pt.brokers) > 0 {
		printTopicCheck(ctx, &check, pt.brokers, warmOK+prodRes.ok)
		if writerRes, err = measureWriter(ctx, cfg, pt.brokers, "k"+runID, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout)
	printJoinRow(stdout, &prodRes)
	if len(pt.brokers) > 0 {
		printJoinRow(stdout, &writerRes)
	} else {
		fmt.Fprintf(stdout, "joins  %-12s  not measured: the brokers behind -producer-url are unknown\n", "kafka-writer")
	}
	printJoinRow(stdout, &echoRes)
	printRatio(stdout, "producer-api/bare-echo", prodRes.rate(), echoRes.rate())
	printRatio(stdout, "producer-api/kafka-writer", prodRes.rate(), writerRes.rate())
	printSummary(stdout, fmt.Sprintf("joins through producer-api, %d clients", cfg.concurrency),
		fmt.Sprintf("%.0f/s, p50 %s, p99 %s", prodRes.rate(), ms(prodRes.percentile(0.5)), ms(prodRes.percentile(0.99))),
		fmt.Sprintf("bare echo handler %.0f/s", echoRes.rate()), prodRes.rate(), echoRes.rate(), "≥ 0.5, p99 < 50 ms")
	printSummary(stdout, "publish: joins through producer-api",
		fmt.Sprintf("%.0f/s", prodRes.rate()),
		fmt.Sprintf("kafka-go writer straight into the broker %.0f/s", writerRes.rate()), prodRes.rate(), writerRes.rate(), "")
	printErrors(stdout, &prodRes)
	printErrors(stdout, &writerRes)
	printErrors(stdout, &echoRes)
	fmt.Fprint(stdout, check.String())
	return nil
}

// measureWriter measures the kafka-writer baseline, the broker's limit for
// the join path: the service's own Kafka writer (kafkajoin.NewPublisher:
// acks=all, key = user id, Murmur2, the batch timeout of the started
// producer-api) publishing the same join messages into the bench topic, each
// worker waiting for its acknowledgement, with the workers, bounds and
// record of measureTarget. No HTTP is involved: publishTransport stands in
// for the network.
func measureWriter(ctx context.Context, cfg joinsConfig, brokers []string, prefix string, stderr io.Writer) (result, error) {
	bt, err := time.ParseDuration(cmp.Or(cfg.batchTimeout, "0s")) // 0: the service default
	if err != nil {
		return result{}, fmt.Errorf("-batch-timeout: %w", err)
	}
	pub := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: kafkajoin.BrokerConfig{Brokers: brokers}, BatchTimeout: bt})
	defer func() {
		if err := pub.Close(); err != nil {
			fmt.Fprintf(stderr, "loadgen: kafka-writer: close: %v\n", err)
		}
	}()
	lc := &loadClient{http: &http.Client{Transport: publishTransport{pub: pub}, Timeout: 10 * time.Second}}
	// The .invalid host (RFC 2606) is never dialled: publishTransport
	// answers every request itself.
	t := target{"kafka-writer", "http://kafka-writer.invalid/v1/events/" + benchEvent + "/queue"}
	r, _, err := measureTarget(ctx, lc, cfg, t, prefix, stderr)
	return r, err
}

// publishTransport is the http.RoundTripper of the kafka-writer baseline. It
// sends nothing over the network: it publishes the join of the request's
// X-User-Id to the bench event, built as producer-api builds it, and
// answers 202 once the broker acknowledged it, or 503 with the error (as the
// service answers broker_unavailable). Behind an http.Client it lets the
// HTTP workers of load.go drive the bare writer. Safe for concurrent use.
type publishTransport struct {
	pub *kafkajoin.Publisher
}

// RoundTrip implements http.RoundTripper.
func (t publishTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	m := queue.Message{
		V: queue.MessageVersion, Op: queue.OpJoin, EventID: benchEvent, UserID: req.Header.Get("X-User-Id"),
		TS: time.Now().UnixMilli(), ID: app.RandomHex(12),
	}
	ctx, cancel := context.WithTimeout(req.Context(), writerPublishTimeout)
	defer cancel()
	status, body := http.StatusAccepted, ""
	if err := t.pub.Publish(ctx, m); err != nil {
		status, body = http.StatusServiceUnavailable, err.Error()
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}, nil
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
	return startService(ctx, &app.Producer{}, map[string]string{
		"WAITQ_KAFKA_BROKERS":       strings.Join(st.Brokers(), ","),
		"WAITQ_REDIS_URL":           st.redis.URL(),
		"WAITQ_TICKET_SECRET":       app.RandomHex(32),
		"WAITQ_ADMIN_TOKEN":         adminToken,
		"WAITQ_KAFKA_BATCH_TIMEOUT": batchTimeout,
		"WAITQ_RATE":                "0", // one client address sends every join
	}, stderr)
}

// startService runs svc in this process with the settings env (plus a free
// loopback WAITQ_HTTP_ADDR, error-level logs to nowhere and a 5 s shutdown)
// and waits until its /readyz answers 200. stop ends it and waits at most
// 15 s for it to return.
func startService(ctx context.Context, svc app.Service, env map[string]string, stderr io.Writer) (base string, stop func(), err error) {
	port, err := redisproc.FreePort()
	if err != nil {
		return "", nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	env = maps.Clone(env)
	env["WAITQ_HTTP_ADDR"] = addr
	env["WAITQ_LOG_LEVEL"] = "error"
	env["WAITQ_SHUTDOWN_TIMEOUT"] = "5s"
	pctx, cancel := context.WithCancel(ctx)
	exited := make(chan struct{})
	var runErr error
	go func() {
		defer close(exited)
		runErr = app.Run(pctx, svc, nil, func(k string) string { return env[k] }, io.Discard)
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
		return "", nil, fmt.Errorf("%s: %w", svc.Name(), err)
	}
	stop = func() {
		if err := shutdown(); err != nil {
			fmt.Fprintf(stderr, "loadgen: %s: %v\n", svc.Name(), err)
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
		strings.NewReader(fmt.Sprintf(`{"capacity":100,"partitions":%d}`, benchPartitions)))
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

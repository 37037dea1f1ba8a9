package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/stack/svcproc"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// Bounds and fixed settings of "loadgen adaptive".
const (
	maxAdaptiveUsers = 20_000
	maxAdaptiveRun   = 15 * time.Minute
	maxAdaptiveRate  = 100_000
	// adaptiveCapacity is the events' capacity: large, so that the rate is
	// what limits admission.
	adaptiveCapacity = 100_000
	adaptiveHold     = 60 // s
	// adaptiveMonitor is the gateway's slot-monitor tick.
	adaptiveMonitor = 500 * time.Millisecond
	// The guard's health reports: their window and interval.
	adaptiveWindow   = 5 * time.Second
	adaptiveInterval = time.Second
	// adaptiveSignalTimeout is the controller's signalTimeoutSeconds (at
	// least the step).
	adaptiveSignalTimeout = 10 * time.Second
	adaptiveReporter      = "loadgen-guard"
	// visitPages is the shop's pages of one visit: home, a product, the
	// order (the guard's done path).
	visitPages = 3
	// pageTimeout bounds one page; retryAfter is the wait before the one
	// retry of a failed page (the shop's Retry-After).
	pageTimeout = 15 * time.Second
	retryAfter  = time.Second
)

// adaptiveConfig are the settings of "loadgen adaptive".
type adaptiveConfig struct {
	users        int
	arrive       time.Duration
	ceiling      int
	cautious     int
	target       time.Duration
	step         time.Duration
	workers      int
	workTime     time.Duration
	queueTimeout time.Duration
	think        time.Duration
	maxRun       time.Duration
	svg, csv     string
}

// bind declares the adaptive flags.
func (c *adaptiveConfig) bind(fs *flag.FlagSet) {
	fs.IntVar(&c.users, "users", 3000, "visitors of each run, each joining, waiting for the admitted frame and visiting the shop")
	fs.DurationVar(&c.arrive, "arrive", 20*time.Second, "time over which the visitors join, evenly (0: all at once)")
	fs.IntVar(&c.ceiling, "ceiling", 3000, "admitPerMinute of both runs: the adaptive run's ceiling, the fixed run's rate")
	fs.IntVar(&c.cautious, "cautious", 0, "admitPerMinute of a third run at a fixed cautious rate (0: no third run)")
	fs.DurationVar(&c.target, "target", 250*time.Millisecond, "the adaptive run's targetLatencyMs")
	fs.DurationVar(&c.step, "step", time.Second, "the adaptive run's stepMs")
	fs.IntVar(&c.workers, "shop-workers", 2, "pages the demo shop serves at once")
	fs.DurationVar(&c.workTime, "shop-work-time", 25*time.Millisecond, "time each shop page holds a worker")
	fs.DurationVar(&c.queueTimeout, "shop-queue-timeout", 2*time.Second, "longest wait for a shop worker; past it the page is 503")
	fs.DurationVar(&c.think, "think", 750*time.Millisecond, "mean think time between a visitor's pages (uniform from half to one and a half times it)")
	fs.DurationVar(&c.maxRun, "max-run", 4*time.Minute, "longest run; visitors still waiting then are counted as such")
	fs.StringVar(&c.svg, "svg", "bench/adaptive.svg", "where the chart is written (empty: no chart)")
	fs.StringVar(&c.csv, "csv", "bench/adaptive.csv", "where the per-second samples are written (empty: none)")
}

// line returns the settings line of the adaptive table.
func (c *adaptiveConfig) line() string {
	return fmt.Sprintf("-users %d -arrive %s -ceiling %d -cautious %d -target %s -step %s -shop-workers %d -shop-work-time %s -shop-queue-timeout %s -think %s -max-run %s",
		c.users, c.arrive, c.ceiling, c.cautious, c.target, c.step, c.workers, c.workTime, c.queueTimeout, c.think, c.maxRun)
}

// validate checks the adaptive flags.
func (c *adaptiveConfig) validate() error {
	var errs []error
	if c.users < 1 || c.users > maxAdaptiveUsers {
		errs = append(errs, fmt.Errorf("-users %d: must be between 1 and %d", c.users, maxAdaptiveUsers))
	}
	if c.arrive < 0 || c.arrive > 5*time.Minute {
		errs = append(errs, fmt.Errorf("-arrive %s: must be between 0 and 5m", c.arrive))
	}
	if c.ceiling < 1 || c.ceiling > maxAdaptiveRate {
		errs = append(errs, fmt.Errorf("-ceiling %d: must be between 1 and %d", c.ceiling, maxAdaptiveRate))
	}
	if c.cautious < 0 || c.cautious > maxAdaptiveRate {
		errs = append(errs, fmt.Errorf("-cautious %d: must be between 0 and %d", c.cautious, maxAdaptiveRate))
	}
	if c.target < time.Millisecond || c.target > time.Minute {
		errs = append(errs, fmt.Errorf("-target %s: must be between 1ms and 1m", c.target))
	}
	if c.step < time.Duration(queue.MinStepMs)*time.Millisecond || c.step > time.Minute {
		errs = append(errs, fmt.Errorf("-step %s: must be between %dms and 1m", c.step, queue.MinStepMs))
	}
	if c.workers < 1 || c.workers > 1000 {
		errs = append(errs, fmt.Errorf("-shop-workers %d: must be between 1 and 1000", c.workers))
	}
	if c.workTime < time.Millisecond || c.workTime > 10*time.Second {
		errs = append(errs, fmt.Errorf("-shop-work-time %s: must be between 1ms and 10s", c.workTime))
	}
	if c.queueTimeout < 100*time.Millisecond || c.queueTimeout > time.Minute {
		errs = append(errs, fmt.Errorf("-shop-queue-timeout %s: must be between 100ms and 1m", c.queueTimeout))
	}
	if c.think < 0 || c.think > time.Minute {
		errs = append(errs, fmt.Errorf("-think %s: must be between 0 and 1m", c.think))
	}
	if c.maxRun < 10*time.Second || c.maxRun > maxAdaptiveRun {
		errs = append(errs, fmt.Errorf("-max-run %s: must be between 10s and %s", c.maxRun, maxAdaptiveRun))
	}
	return errors.Join(errs...)
}

// shopPerMinute is the visitors a minute the demo shop bears at most: its
// pages a second (workers / work time) over the pages of a visit. waitq is
// never told it.
func (c *adaptiveConfig) shopPerMinute() float64 {
	return float64(c.workers) / c.workTime.Seconds() * 60 / visitPages
}

// admissionMode is how one run admits.
type admissionMode struct {
	name      string // "adaptive", "fixed" or "cautious"
	perMinute int    // the fixed rate, or the adaptive ceiling
	adaptive  bool
}

// label describes the mode for a person.
func (m admissionMode) label(cfg adaptiveConfig) string {
	if m.adaptive {
		return fmt.Sprintf("adaptive: ceiling %d/min, target p95 %d ms", m.perMinute, cfg.target.Milliseconds())
	}
	return fmt.Sprintf("fixed: %d/min", m.perMinute)
}

// modes returns the runs of cfg in order: adaptive, fixed at the ceiling
// and, when asked, fixed at the cautious rate.
func (c *adaptiveConfig) modes() []admissionMode {
	m := []admissionMode{{"adaptive", c.ceiling, true}, {"fixed", c.ceiling, false}}
	if c.cautious > 0 {
		m = append(m, admissionMode{"cautious", c.cautious, false})
	}
	return m
}

// RunAdaptive shows adaptive admission at work: the same crowd of visitors
// (join, wait for the admitted frame, then three pages of the demo shop
// through waitq-guard with a think time between them, the last one the
// order that gives the slot back) meets a shop whose capacity waitq is not
// told, once with the rate set by the guard's health reports and once at a
// fixed rate, each run on a stack of its own. It samples the line, the
// rates and what the visitors see once a second, prints the table, and
// writes the chart (SVG) and the samples (CSV).
func RunAdaptive(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg adaptiveConfig
	if ok, err := begin("adaptive", &cfg, args, stdout, stderr); !ok {
		return err
	}
	for _, p := range []string{cfg.svg, cfg.csv} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Dir(p)); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s: its directory does not exist (run from the repository's root, or give another path)", p)
		}
	}
	fmt.Fprintf(stdout, "target   per run: producer-api, ingest-consumer (fast track), ws-gateway (monitor tick %s) and waitq-guard (health window %s, report every %s) in-process in front of the demo shop (%d workers × %s a page, queue timeout %s: about %.0f visitors a minute of %d pages), kfake in-process, redis-server child\n",
		adaptiveMonitor, adaptiveWindow, adaptiveInterval, cfg.workers, cfg.workTime, cfg.queueTimeout, cfg.shopPerMinute(), visitPages)
	var runs []*adaptiveRun
	for _, m := range cfg.modes() {
		fmt.Fprintf(stderr, "  run %s\n", m.label(cfg))
		r, err := measureAdaptive(ctx, cfg, m, stderr)
		if err != nil {
			return fmt.Errorf("run %s: %w", m.name, err)
		}
		runs = append(runs, r)
	}
	rows := make([][]secondRow, len(runs))
	for i, r := range runs {
		rows[i] = r.rows()
	}
	printAdaptive(stdout, cfg, runs, rows)
	if cfg.csv != "" {
		if err := writeAdaptiveCSV(cfg.csv, runs, rows); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", cfg.csv)
	}
	if cfg.svg != "" {
		if err := writeAdaptiveChart(cfg.svg, cfg, runs, rows); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", cfg.svg)
	}
	return nil
}

// adaptiveStack is one run's services over a stack of its own: producer-
// api, ingest-consumer, ws-gateway, the demo shop and waitq-guard in front
// of it, with the run's event.
type adaptiveStack struct {
	services
	producer, gateway, guard string // base URLs
	event, token             string
	shop                     *demoshop.Shop
	admin                    *http.Client // of producer-api's admin API
}

// startAdaptiveStack starts the services of a run admitting by m and
// creates its event before the consumer and the guard start (the consumer
// finds it at its first discovery; the guard reports with its report
// token).
func startAdaptiveStack(ctx context.Context, cfg adaptiveConfig, m admissionMode, stderr io.Writer) (_ *adaptiveStack, err error) {
	st, err := startInfra(ctx, false)
	if err != nil {
		return nil, err
	}
	s := &adaptiveStack{services: newServices(st, true, stderr), event: "adaptive-" + m.name, token: stack.RandomHex(16),
		admin: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}}
	s.AtClose(st.Close)
	s.AtClose(s.admin.CloseIdleConnections)
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	secret := stack.RandomHex(32)
	if s.producer, err = s.start(ctx, &app.Producer{}, map[string]string{"WAITQ_TICKET_SECRET": secret, "WAITQ_ADMIN_TOKEN": s.token, "WAITQ_TRUST_USER_HEADER": "true"}); err != nil {
		return nil, err
	}
	if s.shop, err = demoshop.New(demoshop.Config{Workers: cfg.workers, WorkTime: cfg.workTime, QueueTimeout: cfg.queueTimeout}); err != nil {
		return nil, err
	}
	shopBase, stopShop, err := serveLoopback("demo shop", s.shop)
	if err != nil {
		return nil, err
	}
	s.AtClose(stopShop)
	guardAddr, err := svcproc.FreeAddr() // the event's target, known before the guard starts
	if err != nil {
		return nil, err
	}
	if err := createEvent(ctx, s.producer, s.token, s.event, eventBody(cfg, m, "http://"+guardAddr+"/")); err != nil {
		return nil, err
	}
	ev, err := s.status(ctx)
	if err != nil {
		return nil, err
	}
	if _, err = s.start(ctx, &app.Ingest{}, nil); err != nil {
		return nil, err
	}
	if s.gateway, err = s.start(ctx, &app.Gateway{}, map[string]string{
		"WAITQ_TICKET_SECRET": secret, "WAITQ_ADMIT_INTERVAL": adaptiveMonitor.String(),
	}); err != nil {
		return nil, err
	}
	g, err := stack.StartService(ctx, &app.Guard{}, map[string]string{
		"WAITQ_HTTP_ADDR":        guardAddr,
		"WAITQ_ORIGIN_URL":       shopBase,
		"WAITQ_EVENT_ID":         s.event,
		"WAITQ_WAITING_ROOM_URL": s.gateway + "/",
		"WAITQ_GATEWAY_URL":      s.gateway,
		"WAITQ_DONE_PATH":        "/order",
		"WAITQ_COOKIE_INSECURE":  "true", // plain HTTP on loopback
		"WAITQ_HEALTH_URL":       s.producer,
		"WAITQ_HEALTH_TOKEN":     ev.ReportToken,
		"WAITQ_HEALTH_INTERVAL":  adaptiveInterval.String(),
		"WAITQ_HEALTH_WINDOW":    adaptiveWindow.String(),
		"WAITQ_HEALTH_REPORTER":  adaptiveReporter,
	}, stack.ServiceOptions{ReadyPath: guard.AdminPrefix + "readyz"})
	if err != nil {
		return nil, err
	}
	s.guard = g.URL()
	s.AtClose(stopper(g, stderr))
	return s, nil
}

// eventBody is the admin PUT body of a run's event: room for everyone, the
// guard as its target, the rate of m.
func eventBody(cfg adaptiveConfig, m admissionMode, target string) string {
	body := map[string]any{
		"capacity": adaptiveCapacity, "holdSeconds": adaptiveHold, "partitions": benchPartitions,
		"admitPerMinute": m.perMinute, "targetUrl": target,
	}
	if m.adaptive {
		body["adaptive"] = map[string]any{
			"targetLatencyMs":      cfg.target.Milliseconds(),
			"stepMs":               cfg.step.Milliseconds(),
			"signalTimeoutSeconds": int(math.Ceil(max(adaptiveSignalTimeout, cfg.step).Seconds())),
		}
	}
	b, _ := json.Marshal(body)
	return string(b)
}

// status reads the run's event through producer-api's admin GET.
func (s *adaptiveStack) status(ctx context.Context) (queue.EventStatus, error) {
	var ev queue.EventStatus
	id := s.event
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.producer+"/v1/admin/events/"+id, nil)
	if err != nil {
		return ev, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.admin.Do(req)
	if err != nil {
		return ev, fmt.Errorf("admin GET %s: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return ev, fmt.Errorf("admin GET %s: %s: %s", id, resp.Status, report.OneLine(string(b)))
	}
	return ev, json.NewDecoder(resp.Body).Decode(&ev)
}

// pageRecord is one shop page a visitor asked for.
type pageRecord struct {
	end    time.Duration // since the run's start
	took   time.Duration
	failed bool
}

// adaptiveTick is what the run's sampler read at one second.
type adaptiveTick struct {
	at                     time.Duration
	waiting, total         int64 // the admin GET's line and admittedTotal
	rate                   int   // the effective rate, users a minute
	guardP95, guardErrors  float64
	shopBusy, shopQueued   int
	controlled, signalLost bool
}

// adaptiveRun is what one run recorded.
type adaptiveRun struct {
	mode    admissionMode
	start   time.Time
	elapsed time.Duration

	mu       sync.Mutex
	joined   []time.Duration // since the start, of each kind of moment
	admitted []time.Duration
	ordered  []time.Duration
	gaveUp   []time.Duration
	pages    []pageRecord
	failures tally
	ticks    []adaptiveTick
	changes  []queue.RateChange        // oldest first, gathered from the samples
	seen     map[queue.RateChange]bool // … those in changes
	final    queue.EventStatus
	reports  int // samples that showed a fresh report of the guard
}

// since returns the time since the run's start.
func (r *adaptiveRun) since() time.Duration { return time.Since(r.start) }

// mark appends the time since the start to *list.
func (r *adaptiveRun) mark(list *[]time.Duration) {
	d := r.since()
	r.mu.Lock()
	*list = append(*list, d)
	r.mu.Unlock()
}

// fail counts a failure of class.
func (r *adaptiveRun) fail(class string, err error) {
	r.mu.Lock()
	r.failures.add(class, err.Error())
	r.mu.Unlock()
}

// measureAdaptive runs one mode on a stack of its own.
func measureAdaptive(ctx context.Context, cfg adaptiveConfig, m admissionMode, stderr io.Writer) (*adaptiveRun, error) {
	s, err := startAdaptiveStack(ctx, cfg, m, stderr)
	if err != nil {
		return nil, err
	}
	defer s.close()
	// The guard reports before the sale starts, as it would in front of a
	// live shop: wait for its first report.
	if err := waitForReport(ctx, s); err != nil {
		return nil, err
	}

	r := &adaptiveRun{mode: m, failures: newTally(), seen: map[queue.RateChange]bool{}}
	runCtx, cancel := context.WithTimeout(ctx, cfg.maxRun)
	defer cancel()
	joins := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}}
	defer joins.CloseIdleConnections()
	visits := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 512, IdleConnTimeout: 30 * time.Second, DisableCompression: true}
	defer visits.CloseIdleConnections()

	r.start = time.Now()
	var sampler sync.WaitGroup
	sampleCtx, stopSampling := context.WithCancel(runCtx)
	sampler.Go(func() { r.sample(sampleCtx, s, stderr) })

	var wg sync.WaitGroup
	var every time.Duration
	if cfg.users > 1 {
		every = cfg.arrive / time.Duration(cfg.users-1)
	}
	for i := range cfg.users {
		if !clock.SleepUntil(runCtx, r.start.Add(time.Duration(i)*every)) {
			break
		}
		wg.Go(func() { r.visitor(runCtx, cfg, s, joins, visits, i) })
	}
	wg.Wait()
	r.elapsed = r.since()
	stopSampling()
	sampler.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if r.final, err = s.status(ctx); err != nil {
		return nil, err
	}
	r.gather(r.final)
	fmt.Fprintf(stderr, "  %s: %.0fs, %d joined, %d admitted, %d ordered, %d gave up, %d pages\n",
		m.name, r.elapsed.Seconds(), len(r.joined), len(r.admitted), len(r.ordered), len(r.gaveUp), len(r.pages))
	return r, nil
}

// waitForReport waits until producer-api holds a report of the run's guard.
func waitForReport(ctx context.Context, s *adaptiveStack) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		ev, err := s.status(ctx)
		if err == nil && len(ev.Health) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no health report of the guard reached producer-api within 15s (%v)", err)
		}
		if !clock.SleepUntil(ctx, time.Now().Add(200*time.Millisecond)) {
			return ctx.Err()
		}
	}
}

// visitor is one person: joins, waits on the WebSocket for the admitted
// frame, then visits the shop through the guard. Once ctx ends it stops
// where it is.
func (r *adaptiveRun) visitor(ctx context.Context, cfg adaptiveConfig, s *adaptiveStack, joins *http.Client, visits http.RoundTripper, i int) {
	j, err := joinAs(ctx, joins, s.producer, s.event, fmt.Sprintf("v%05d", i))
	if err != nil {
		if ctx.Err() == nil {
			r.fail("join", err)
		}
		return
	}
	r.mark(&r.joined)
	f, closeWS, err := awaitAdmitted(ctx, s.gateway, j.StatusURL)
	if err != nil {
		if ctx.Err() == nil {
			r.fail("admitted frame", err)
		}
		return
	}
	go closeWS() // the handshake need not hold the visitor up
	r.mark(&r.admitted)
	if f.RedirectURL == "" {
		r.fail("admitted frame", errors.New("no redirectUrl"))
		return
	}
	if r.visit(ctx, cfg, s, visits, f.RedirectURL, i) {
		r.mark(&r.ordered)
	} else if ctx.Err() == nil {
		r.mark(&r.gaveUp)
	}
}

// visit follows the admitted frame's redirectUrl into the guard (which
// trades the token for its cookie), then asks for the shop's home page, a
// product and the order, thinking between them. A page that fails is
// asked for once more after a second; failing again, the visitor gives up.
// It reports whether the order was placed.
func (r *adaptiveRun) visit(ctx context.Context, cfg adaptiveConfig, s *adaptiveStack, visits http.RoundTripper, redirect string, i int) bool {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: visits, Jar: jar, Timeout: pageTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status, loc, err := fetch(ctx, c, http.MethodGet, redirect, "")
	if err != nil || status != http.StatusFound {
		if ctx.Err() == nil {
			r.fail("entering through the guard", fmt.Errorf("%d %s %v", status, loc, err))
		}
		return false
	}
	product := strconv.Itoa(demoshop.Products[i%len(demoshop.Products)].ID)
	steps := []struct{ method, path, form string }{
		{http.MethodGet, "/", ""},
		{http.MethodGet, "/product/" + product, ""},
		{http.MethodPost, "/order", "product=" + product},
	}
	for k, st := range steps {
		if k > 0 && cfg.think > 0 && !clock.SleepUntil(ctx, time.Now().Add(cfg.think/2+rand.N(cfg.think))) {
			return false
		}
		if !r.page(ctx, c, st.method, s.guard+st.path, st.form) {
			return false
		}
	}
	return true
}

// page asks for one page, once more after retryAfter when it fails, and
// records each answer; it reports whether the page came.
func (r *adaptiveRun) page(ctx context.Context, c *http.Client, method, url, form string) bool {
	for attempt := range 2 {
		if attempt > 0 && !clock.SleepUntil(ctx, time.Now().Add(retryAfter)) {
			return false
		}
		t0 := time.Now()
		status, loc, err := fetch(ctx, c, method, url, form)
		if ctx.Err() != nil {
			return false // the run is over: not an answer of the shop
		}
		rec := pageRecord{end: r.since(), took: time.Since(t0), failed: err != nil || status != http.StatusOK}
		r.mu.Lock()
		r.pages = append(r.pages, rec)
		switch {
		case err != nil:
			r.failures.add("page: transport", err.Error())
		case status == http.StatusFound:
			r.failures.add("page: sent to the line", loc)
		case status != http.StatusOK:
			r.failures.add("page: status "+strconv.Itoa(status), method+" "+url)
		}
		r.mu.Unlock()
		if !rec.failed {
			return true
		}
	}
	return false
}

// fetch sends one request (a form body when form is not empty) and reads
// the whole answer; it returns the status and the Location header.
func fetch(ctx context.Context, c *http.Client, method, url, form string) (int, string, error) {
	var body io.Reader
	if form != "" {
		body = strings.NewReader(form)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, "", err
	}
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), err
}

// sample reads the event (admin GET) and the shop's workers once a second
// until ctx ends, and prints a progress line.
func (r *adaptiveRun) sample(ctx context.Context, s *adaptiveStack, stderr io.Writer) {
	var lastReport int64
	for k := 1; ; k++ {
		if !clock.SleepUntil(ctx, r.start.Add(time.Duration(k)*time.Second)) {
			return
		}
		ev, err := s.status(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.fail("admin GET", err)
			}
			continue
		}
		shop := s.shop.Stats()
		t := adaptiveTick{at: r.since(), waiting: ev.Waiting, total: ev.AdmittedTotal,
			rate: ev.AdmitPerMinute, guardP95: math.NaN(), guardErrors: math.NaN(), shopBusy: shop.InService, shopQueued: shop.Waiting}
		if ev.Control != nil {
			t.controlled, t.rate, t.signalLost = true, ev.Control.AdmitPerMinute, ev.Control.SignalLost
		}
		for _, h := range ev.Health {
			if h.Reporter != adaptiveReporter {
				continue
			}
			if h.P95Ms != nil {
				t.guardP95 = *h.P95Ms
			}
			if h.ErrorRate != nil {
				t.guardErrors = *h.ErrorRate
			}
			if h.At > lastReport {
				lastReport = h.At
				r.mu.Lock()
				r.reports++
				r.mu.Unlock()
			}
		}
		r.mu.Lock()
		r.ticks = append(r.ticks, t)
		joined, admitted, ordered, gaveUp, pages := len(r.joined), len(r.admitted), len(r.ordered), len(r.gaveUp), len(r.pages)
		r.mu.Unlock()
		r.gather(ev)
		fmt.Fprintf(stderr, "  %-8s %4.0fs  joined %5d  waiting %5d  in shop %4d  ordered %5d  gave up %4d  pages %6d  rate %5d/min  guard p95 %s\n",
			r.mode.name, t.at.Seconds(), joined, ev.Waiting, admitted-ordered-gaveUp, ordered, gaveUp, pages, t.rate, fmtMs(t.guardP95))
	}
}

// gather keeps the rate changes ev shows that it had not seen, in the
// order they were made.
func (r *adaptiveRun) gather(ev queue.EventStatus) {
	if ev.Control == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ch := range slices.Backward(ev.Control.Changes) { // newest first
		if !r.seen[ch] {
			r.seen[ch] = true
			r.changes = append(r.changes, ch)
		}
	}
}

// fmtMs formats milliseconds, "-" for NaN.
func fmtMs(ms float64) string {
	if math.IsNaN(ms) {
		return "-"
	}
	return fmt.Sprintf("%.0fms", ms)
}

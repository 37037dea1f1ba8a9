package loadgen

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/queue"
)

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
	if fi, err := os.Stat(filepath.Dir(adaptiveSVG)); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: its directory does not exist (run from the repository's root)", adaptiveSVG)
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
	printAdaptive(stdout, cfg, runs)
	if err := writeFile(stdout, adaptiveCSV, func(w io.Writer) error { return writeAdaptiveCSV(w, runs) }); err != nil {
		return err
	}
	return writeFile(stdout, adaptiveSVG, adaptiveChart(cfg, runs, time.Now()).Write)
}

// pageRecord is one shop page a visitor asked for.
type pageRecord struct {
	end    time.Duration // since the run's start
	took   time.Duration
	failed bool
}

// adaptiveTick is what the run's sampler read at one second.
type adaptiveTick struct {
	waiting               int   // the admin GET's line
	total                 int64 // its admittedTotal
	rate                  int   // the effective rate, users a minute
	guardP95, guardErrors float64
	shopBusy, shopQueued  int
	signalLost            bool
}

// adaptiveRun is what one run recorded: under mu what the visitors and the
// sampler record at once; the sampler's own (ticks, changes, reports)
// without it, read once the sampler is done.
type adaptiveRun struct {
	mode    admissionMode
	start   time.Time
	elapsed time.Duration
	seconds []secondRow // the rows of the run, once it is over

	mu       sync.Mutex
	joined   []time.Duration // since the start, of each kind of moment
	admitted []time.Duration
	ordered  []time.Duration
	gaveUp   []time.Duration
	pages    []pageRecord
	failures tally

	ticks   map[int]adaptiveTick // by the second of the sample
	changes []queue.RateChange   // oldest first, gathered from the samples
	final   queue.EventStatus
	reports int // samples that showed a fresh report of the guard
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

// fail counts a failure of class, unless ctx is over: the run's end cut
// it short.
func (r *adaptiveRun) fail(ctx context.Context, class string, err error) {
	if ctx.Err() != nil {
		return
	}
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
	r := &adaptiveRun{mode: m, failures: newTally(), ticks: map[int]adaptiveTick{}}
	runCtx, cancel := context.WithTimeout(ctx, cfg.maxRun)
	defer cancel()
	joins := servicesClient()
	defer joins.CloseIdleConnections()
	visits := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 512, IdleConnTimeout: 30 * time.Second, DisableCompression: true}
	defer visits.CloseIdleConnections()

	r.start = time.Now()
	var sampler sync.WaitGroup
	sampleCtx, stopSampling := context.WithCancel(runCtx)
	sampler.Go(func() { r.sample(sampleCtx, s, stderr) })

	var wg sync.WaitGroup
	every := cfg.arrive / time.Duration(max(cfg.users-1, 1))
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
	r.seconds = r.rows()
	return r, nil
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
			r.fail(ctx, "admin GET", err)
			continue
		}
		shop := s.shop.Stats()
		t := adaptiveTick{waiting: int(ev.Waiting), total: ev.AdmittedTotal,
			rate: ev.AdmitPerMinute, guardP95: math.NaN(), guardErrors: math.NaN(), shopBusy: shop.InService, shopQueued: shop.Waiting}
		if ev.Control != nil {
			t.rate, t.signalLost = ev.Control.AdmitPerMinute, ev.Control.SignalLost
		}
		for _, h := range ev.Health { // the guard's, the one reporter
			if h.P95Ms != nil {
				t.guardP95 = *h.P95Ms
			}
			if h.ErrorRate != nil {
				t.guardErrors = *h.ErrorRate
			}
			if h.At > lastReport {
				lastReport = h.At
				r.reports++
			}
		}
		r.ticks[k] = t
		r.gather(ev)
		r.mu.Lock()
		joined, admitted, ordered, gaveUp, pages := len(r.joined), len(r.admitted), len(r.ordered), len(r.gaveUp), len(r.pages)
		r.mu.Unlock()
		fmt.Fprintf(stderr, "  %-8s %4ds  joined %5d  waiting %5d  in shop %4d  ordered %5d  gave up %4d  pages %6d  rate %5d/min  guard p95 %4.0fms\n",
			r.mode.name, k, joined, ev.Waiting, admitted-ordered-gaveUp, ordered, gaveUp, pages, t.rate, t.guardP95)
	}
}

// gather keeps the rate changes ev shows that it had not seen, in the
// order they were made.
func (r *adaptiveRun) gather(ev queue.EventStatus) {
	if ev.Control == nil {
		return
	}
	for _, ch := range slices.Backward(ev.Control.Changes) { // newest first
		if !slices.Contains(r.changes, ch) {
			r.changes = append(r.changes, ch)
		}
	}
}

// Fixed settings of "loadgen adaptive".
const (
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
	// The chart and the per-second samples.
	adaptiveSVG, adaptiveCSV = "bench/adaptive.svg", "bench/adaptive.csv"
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
	shown
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
}

// bind declares the adaptive flags.
func (c *adaptiveConfig) bind(s *settings) {
	s.intVar(&c.users, "users", 3000, 1, 20_000, "visitors of each run, each joining, waiting for the admitted frame and visiting the shop")
	s.durVar(&c.arrive, "arrive", 20*time.Second, "0", "5m", "time over which the visitors join, evenly (0: all at once)")
	s.intVar(&c.ceiling, "ceiling", 3000, 1, 100_000, "admitPerMinute of both runs: the adaptive run's ceiling, the fixed run's rate")
	s.intVar(&c.cautious, "cautious", 0, 0, 100_000, "admitPerMinute of a third run at a fixed cautious rate (0: no third run)")
	s.durVar(&c.target, "target", 250*time.Millisecond, "1ms", "1m", "the adaptive run's targetLatencyMs")
	s.durVar(&c.step, "step", time.Second, fmt.Sprintf("%dms", queue.MinStepMs), "1m", "the adaptive run's stepMs")
	s.intVar(&c.workers, "shop-workers", 2, 1, 1000, "pages the demo shop serves at once")
	s.durVar(&c.workTime, "shop-work-time", 25*time.Millisecond, "1ms", "10s", "time each shop page holds a worker")
	s.durVar(&c.queueTimeout, "shop-queue-timeout", 2*time.Second, "100ms", "1m", "longest wait for a shop worker; past it the page is 503")
	s.durVar(&c.think, "think", 750*time.Millisecond, "0", "1m", "mean think time between a visitor's pages (uniform from half to one and a half times it)")
	s.durVar(&c.maxRun, "max-run", 4*time.Minute, "10s", "15m0s", "longest run; visitors still waiting then are counted as such")
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

package loadgen

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/waitq/waitq/internal/queue"
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

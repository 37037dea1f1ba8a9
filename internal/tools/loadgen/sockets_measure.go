package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/stack/svcproc"
	"github.com/waitq/waitq/internal/tools/loadgen/latency"
	"github.com/waitq/waitq/internal/tools/loadgen/procstat"
)

// sample is one reading of the gateway's and Redis's counters.
type sample struct {
	at      time.Time
	metrics map[string]float64
	redis   map[string]string // INFO stats and cpu
	selfCPU time.Duration
}

// takeSample reads the gateway's metrics, Redis's INFO stats, cpu and
// commandstats (one command), and loadgen's CPU time.
func takeSample(ctx context.Context, gw *svcproc.Proc, rc redis.UniversalClient) (sample, error) {
	s := sample{at: time.Now(), selfCPU: procstat.SelfCPU()}
	var err error
	if s.metrics, err = gatewayMetrics(ctx, gw); err != nil {
		return s, err
	}
	if s.redis, err = redisInfo(ctx, rc, "stats", "cpu", "commandstats"); err != nil {
		return s, err
	}
	return s, nil
}

// redisFloat returns an INFO field as a number, or 0.
func (s sample) redisFloat(key string) float64 {
	v, _ := strconv.ParseFloat(s.redis[key], 64)
	return v
}

// commandStat returns one figure ("calls", "usec") of a command's line in
// INFO commandstats; 0 when absent.
func (s sample) commandStat(command, figure string) float64 {
	return commandStats(s.redis, figure)[command]
}

// gatewayMetrics reads the gateway's unlabelled Prometheus samples.
func gatewayMetrics(ctx context.Context, gw *svcproc.Proc) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	return gw.Metrics(ctx)
}

// socketsResult is everything a run measured.
type socketsResult struct {
	cfg                  socketsConfig
	dial                 dialResult
	rssBefore            int64              // gateway, before the first client
	rssAfter             int64              // gateway, once all clients connected
	rssEnd               int64              // gateway, after the window
	idle                 map[string]float64 // gateway metrics before the first client
	gwFDs, selfFDs       int                // open descriptors once all clients connected
	gwNoFile, selfNoFile string             // their soft limits
	measured             bool

	ticks          int
	quietMs        int64 // the longest stretch of the interval with no frame stamped; 0 when not read
	window         time.Duration
	frames         int64
	missing        int // clients with fewer frames in the window than ticks
	extra          int // clients with more
	droppedInRun   int64
	begin, end     sample
	lat            *latency.Hist
	selfRSS        int64
	selfGoroutines int
	otherFrames    int64
	gwLogDropped   int
	errs           tally
}

// measure aligns a window of whole status intervals on the gateway's tick
// phase, counts the status frames stamped inside it and reads the gateway's
// and Redis's counters at its edges.
func (f *fleet) measure(ctx context.Context, cfg socketsConfig, gw *svcproc.Proc, rc redis.UniversalClient, res *socketsResult, stderr io.Writer) error {
	res.lat = &f.lat
	f.intervalMs.Store(cfg.interval.Milliseconds())
	phase, err := f.waitTick(ctx, cfg, gw, stderr)
	if err != nil {
		return err
	}
	interval := cfg.interval.Milliseconds()
	res.ticks = cfg.ticks()
	res.window = time.Duration(res.ticks) * cfg.interval
	// The window's edges lie in the middle of the longest stretch of the
	// interval in which no frame is stamped (watched for one interval), so
	// it holds exactly res.ticks rounds however the gateway spreads them;
	// without that reading, half an interval after the probe's tick.
	edge := phase + interval/2
	f.clearPhases()
	if err := sleepUntil(ctx, gw, time.Now().Add(cfg.interval+cfg.interval/10).UnixMilli()); err != nil {
		return err
	}
	if quiet, length, ok := f.quietPhase(); ok {
		edge = quiet
		res.quietMs = length
	}
	start := edge
	for nowMs := time.Now().UnixMilli(); start < nowMs+100; {
		start += interval
	}
	end := start + int64(res.ticks)*interval
	f.winStart.Store(start)
	f.winEnd.Store(end)
	grace := end + interval/2 // the last tick's frames get a whole interval to arrive

	began := time.Now()
	stopProgress := startProgressLine(stderr, func() string {
		now := time.Now().UnixMilli()
		stage := "to window"
		if now >= start {
			stage = fmt.Sprintf("window %5.1fs/%.1fs", float64(min(now, end)-start)/1000, res.window.Seconds())
		}
		return fmt.Sprintf("  measure %6.1fs  %s  frames in window %d  dropped %d",
			time.Since(began).Seconds(), stage, f.lat.Count(), f.dropped.Load())
	})
	defer stopProgress()
	if err := sleepUntil(ctx, gw, start); err != nil {
		return err
	}
	if res.begin, err = takeSample(ctx, gw, rc); err != nil {
		return err
	}
	if err := sleepUntil(ctx, gw, end); err != nil {
		return err
	}
	if res.end, err = takeSample(ctx, gw, rc); err != nil {
		return err
	}
	if err := sleepUntil(ctx, gw, grace); err != nil {
		return err
	}
	f.frozen.Store(true)
	stopProgress()

	if res.rssEnd, err = procstat.RSS(gw.Pid()); err != nil {
		return err
	}
	res.selfRSS, _ = procstat.RSS(os.Getpid())
	res.selfGoroutines = runtime.NumGoroutine()
	for _, c := range f.clients {
		if c == nil {
			continue
		}
		n := int(c.inWindow.Load())
		res.frames += int64(n)
		switch {
		case n < res.ticks:
			res.missing++
		case n > res.ticks:
			res.extra++
		}
	}
	res.droppedInRun = f.dropped.Load()
	res.otherFrames = f.other.Load()
	res.measured = true
	return nil
}

// collectErrors copies the error counts into res.
func (f *fleet) collectErrors(res *socketsResult) {
	f.errMu.Lock()
	defer f.errMu.Unlock()
	res.errs = newTally()
	res.errs.addAll(f.errs)
}

// waitTick waits until the probe client has seen a regular status tick and
// returns its server stamp (ms).
func (f *fleet) waitTick(ctx context.Context, cfg socketsConfig, gw *svcproc.Proc, stderr io.Writer) (int64, error) {
	limit := 3*cfg.interval + 10*time.Second
	began := time.Now()
	stopProgress := startProgressLine(stderr, func() string {
		return fmt.Sprintf("  waiting for a status tick %4.1fs", time.Since(began).Seconds())
	})
	defer stopProgress()
	err := poll(ctx, limit, 20*time.Millisecond, func() (bool, error) {
		if !gw.Running() && f.probeTick.Load() == 0 {
			return true, errors.New("ws-gateway exited")
		}
		return f.probeTick.Load() != 0, nil
	}, func(error) error { return fmt.Errorf("no status tick reached the probe client within %s", limit) })
	return f.probeTick.Load(), err
}

// sleepUntil waits until the wall clock reaches ms, ctx ends or the gateway
// exits.
func sleepUntil(ctx context.Context, gw *svcproc.Proc, ms int64) error {
	d := time.Until(time.UnixMilli(ms))
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-gw.Exited():
		return errors.New("ws-gateway exited during the measurement")
	}
}

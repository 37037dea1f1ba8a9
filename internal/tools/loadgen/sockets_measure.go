package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/stack/svcproc"
	"github.com/waitq/waitq/internal/tools/loadgen/procstat"
)

// run connects the fleet, prints what that took and, when a client
// connected, measures the window and prints what it saw.
func (f *fleet) run(ctx context.Context, rc redis.UniversalClient, stdout, stderr io.Writer) error {
	rssBefore, err := procstat.RSS(f.gw.Pid())
	if err != nil {
		return err
	}
	idle, err := f.gw.Metrics(ctx)
	if err != nil {
		return err
	}
	f.dialAll(stderr)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	rssAfter, err := procstat.RSS(f.gw.Pid())
	if err != nil {
		return err
	}
	rssPer := float64(rssAfter-rssBefore) / max(float64(f.connected.Load()), 1)
	f.printDial(stdout, rssBefore, rssAfter)
	if f.connected.Load() == 0 {
		err = errors.New("no client connected")
	} else if win, merr := f.measure(ctx, rc, stderr); merr != nil {
		err = fmt.Errorf("measure: %w", merr)
	} else {
		f.printWindow(stdout, win, idle, rssPer)
	}
	f.errMu.Lock()
	defer f.errMu.Unlock()
	f.errs.print(stdout, "errors   ")
	return err
}

// sample is one reading of the gateway's metrics, with Redis's and
// loadgen's counters added under names of their own.
type sample struct {
	at time.Time
	m  map[string]float64
}

// takeSample reads the gateway's metrics, Redis's INFO stats, cpu and
// commandstats (EVALSHA's line), and loadgen's CPU time.
func takeSample(ctx context.Context, gw *svcproc.Proc, rc redis.UniversalClient) (sample, error) {
	at := time.Now()
	self, err := procstat.CPU(os.Getpid())
	if err != nil {
		return sample{}, err
	}
	m, err := gw.Metrics(ctx)
	if err != nil {
		return sample{}, err
	}
	info, err := redisInfo(ctx, rc, "stats", "cpu", "commandstats")
	if err != nil {
		return sample{}, err
	}
	num := func(key string) float64 {
		v, _ := strconv.ParseFloat(info[key], 64)
		return v
	}
	m["redis_commands"] = num("total_commands_processed")
	m["redis_cpu_seconds"] = num("used_cpu_sys") + num("used_cpu_user")
	m["redis_evalsha_calls"] = commandStats(info, "calls")["evalsha"]
	m["redis_evalsha_seconds"] = commandStats(info, "usec")["evalsha"] / 1e6
	m["loadgen_cpu_seconds"] = self.Seconds()
	return sample{at: at, m: m}, nil
}

// window is what the measurement window saw.
type window struct {
	ticks          int
	quietMs        int64 // the longest stretch of the interval with no frame stamped; 0 when not read
	frames         int64
	missing, extra int // clients with fewer, with more frames in the window than ticks
	begin, end     sample
}

// measure counts the status frames stamped inside a window of whole status
// intervals aligned by alignWindow and reads the gateway's and Redis's
// counters at its edges.
func (f *fleet) measure(ctx context.Context, rc redis.UniversalClient, stderr io.Writer) (win window, err error) {
	win.ticks = f.cfg.ticks()
	span := time.Duration(win.ticks) * f.cfg.interval
	began := time.Now()
	stopProgress := startProgressLine(stderr, func() string {
		stage, now, start := "to window", time.Now().UnixMilli(), f.winStart.Load()
		if start > 0 && now >= start {
			stage = fmt.Sprintf("window %5.1fs/%.1fs", float64(min(now-start, span.Milliseconds()))/1000, span.Seconds())
		}
		return fmt.Sprintf("  measure %6.1fs  %s  frames in window %d  dropped %d",
			time.Since(began).Seconds(), stage, f.lat.Count(), f.dropped.Load())
	})
	defer stopProgress()
	start, quietMs, err := f.alignWindow(ctx)
	if err != nil {
		return win, err
	}
	win.quietMs = quietMs
	end := start + span.Milliseconds()
	f.winStart.Store(start)
	f.winEnd.Store(end)
	if err := sleepUntil(ctx, f.gw, start); err != nil {
		return win, err
	}
	if win.begin, err = takeSample(ctx, f.gw, rc); err != nil {
		return win, err
	}
	if err := sleepUntil(ctx, f.gw, end); err != nil {
		return win, err
	}
	if win.end, err = takeSample(ctx, f.gw, rc); err != nil {
		return win, err
	}
	// The last tick's frames get half an interval more to arrive.
	if err := sleepUntil(ctx, f.gw, end+f.cfg.interval.Milliseconds()/2); err != nil {
		return win, err
	}
	f.winEnd.Store(0)
	stopProgress()
	for _, c := range f.clients {
		if c == nil {
			continue
		}
		n := int(c.inWindow.Load())
		win.frames += int64(n)
		switch {
		case n < win.ticks:
			win.missing++
		case n > win.ticks:
			win.extra++
		}
	}
	return win, nil
}

// alignWindow waits for a regular status tick, watches where frames are
// stamped for an interval more and returns the window's start, at least
// 100 ms away, in the middle of the longest stretch with none (quietMs
// long), so that the window holds whole rounds however the gateway spreads
// them; without one, half an interval after the latest tick.
func (f *fleet) alignWindow(ctx context.Context) (start, quietMs int64, err error) {
	limit := 3*f.cfg.interval + 10*time.Second
	err = poll(ctx, limit, 20*time.Millisecond, func() (bool, error) {
		if !f.gw.Running() && f.lastTick.Load() == 0 {
			return true, errors.New("ws-gateway exited")
		}
		return f.lastTick.Load() != 0, nil
	}, func(error) error { return fmt.Errorf("no status tick reached the clients within %s", limit) })
	if err != nil {
		return 0, 0, err
	}
	f.clearPhases()
	if err := sleepUntil(ctx, f.gw, time.Now().Add(f.cfg.interval+f.cfg.interval/10).UnixMilli()); err != nil {
		return 0, 0, err
	}
	iv := f.cfg.interval.Milliseconds()
	edge, quietMs, ok := f.quietPhase()
	if !ok {
		edge = f.lastTick.Load() + iv/2
	}
	soon := time.Now().UnixMilli() + 100
	return soon + ((edge-soon)%iv+iv)%iv, quietMs, nil
}

// sleepUntil waits until the wall clock reaches ms, ctx ends or the gateway
// exits.
func sleepUntil(ctx context.Context, gw *svcproc.Proc, ms int64) error {
	select {
	case <-time.After(time.Until(time.UnixMilli(ms))):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-gw.Exited():
		return errors.New("ws-gateway exited during the measurement")
	}
}

package redisstore_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testredis"
)

// The adaptive controller (lua/adaptive.lua) runs in the admission step; these tests drive it on a
// simulated clock against a real Redis, with a modelled origin reporting
// its health as a guard would.

// shop is an origin whose latency rises past the target once more than
// limit visitors are inside (hold a slot): base ms, and perVisitor ms more
// for each visitor over the limit; failing makes half its answers errors.
// Its guard reports the p95 over a sliding window, each moment weighed by
// the visitors inside (they make the requests).
type shop struct {
	limit      int64
	base       float64
	perVisitor float64
	windowMs   int64
	failing    bool
	moments    []moment
}

type moment struct {
	at     int64
	ms     float64
	weight int64
}

func (o *shop) latency(inside int64) float64 {
	return o.base + o.perVisitor*float64(max(0, inside-o.limit))
}

// observe records the latency visitors see at now with inside of them.
func (o *shop) observe(now, inside int64) {
	o.moments = append(o.moments, moment{now, o.latency(inside), max(inside, 1)})
	drop := 0
	for drop < len(o.moments) && o.moments[drop].at <= now-o.windowMs {
		drop++
	}
	o.moments = o.moments[drop:]
}

// report is what the guard posts at now: the window's weighted p95 and
// error share.
func (o *shop) report() queue.HealthReport {
	sorted := slices.Clone(o.moments)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ms < sorted[j].ms })
	var total, seen int64
	for _, m := range sorted {
		total += m.weight
	}
	p95 := 0.0
	for _, m := range sorted {
		seen += m.weight
		if float64(seen) >= 0.95*float64(total) {
			p95 = m.ms
			break
		}
	}
	errs := 0.0
	if o.failing {
		errs = 0.5
	}
	return queue.HealthReport{Reporter: "guard-1", WindowMs: o.windowMs, Requests: &total, P95Ms: &p95, ErrorRate: &errs}
}

// drive is a simulated run: every tickMs one slot-monitor tick, every
// reportMs a health report (unless silent), both at the simulated now.
type drive struct {
	t                  *testing.T
	s                  *redisstore.Store
	ev                 string
	now                int64
	tickMs, reportMs   int64
	shop               *shop
	silent             bool
	admitted, holders  int64
	onTick             func(now int64, r queue.TickResult)
	stores             []*redisstore.Store // more gateways ticking at the same moments
	lastReportAt       int64
	ticksSinceReported int
}

func (d *drive) until(endMs int64) {
	d.t.Helper()
	ctx := context.Background()
	for ; d.now < endMs; d.now += d.tickMs {
		if !d.silent && d.now-d.lastReportAt >= d.reportMs {
			if err := d.s.ReportHealth(ctx, d.ev, d.shop.report(), d.now); err != nil {
				d.t.Fatal(err)
			}
			d.lastReportAt = d.now
		}
		req := queue.TickRequest{EventIDs: []string{d.ev}, NowMs: d.now, AdmitBatch: 100, SweepLimit: 100}
		results := make([]queue.TickResult, 1+len(d.stores))
		var wg sync.WaitGroup
		for i, s := range append([]*redisstore.Store{d.s}, d.stores...) {
			wg.Go(func() {
				res, err := s.Tick(ctx, req)
				if err != nil {
					d.t.Error(err)
					return
				}
				results[i] = res[0]
			})
		}
		wg.Wait()
		if d.t.Failed() {
			d.t.FailNow()
		}
		r := results[0]
		for _, o := range results[1:] {
			r.Admitted = append(r.Admitted, o.Admitted...)
			r.Holders = max(r.Holders, o.Holders)
		}
		d.admitted += int64(len(r.Admitted))
		d.holders = r.Holders
		if d.shop != nil {
			d.shop.observe(d.now, r.Holders)
		}
		if d.onTick != nil {
			d.onTick(d.now, r)
		}
	}
}

// adaptiveEvent registers ev with a line of users, hold seconds, a ceiling
// and adaptive settings a (defaults filled), and returns a drive at time 1 s.
func adaptiveEvent(t *testing.T, s *redisstore.Store, ev string, users, hold, ceiling int, a queue.Adaptive) *drive {
	t.Helper()
	ctx := context.Background()
	a = a.WithDefaults(ceiling)
	e := queue.Event{ID: ev, Capacity: 100_000, StaySeconds: hold, AdmitPerMinute: ceiling, State: queue.StateOpen, Partitions: 1, Adaptive: &a}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	msgs := make([]queue.Message, users)
	for i := range msgs {
		msgs[i] = msg(queue.OpJoin, ev, fmt.Sprintf("u%06d", i), int64(i+1))
	}
	for len(msgs) > 0 {
		n := min(len(msgs), 1000)
		if _, err := s.Ingest(ctx, msgs[:n], 0); err != nil {
			t.Fatal(err)
		}
		msgs = msgs[n:]
	}
	return &drive{t: t, s: s, ev: ev, now: 1000, tickMs: 100, reportMs: 250}
}

func control(t *testing.T, s *redisstore.Store, ev string, now int64) *queue.ControlStatus {
	t.Helper()
	st, err := s.EventStatus(context.Background(), ev, now)
	if err != nil {
		t.Fatal(err)
	}
	if st.Control == nil {
		t.Fatalf("event %s has no controller: %+v", ev, st)
	}
	return st.Control
}

// TestAdaptiveSettlesAtWhatTheOriginBears: the shop's p95 passes the 100 ms
// target once more than 40 visitors are inside, and each visitor stays for
// the whole 4 s hold, so it bears 40 per hold: 600 a minute. The ceiling is
// twice that. After settling, the admission rate must average 60 % to 105 %
// of 600 a minute, the p95 reported must be within the target in at least
// 80 % of the reports and above twice the target in at most 5 %, and no
// 10 s window may admit more than the ceiling allows.
func TestAdaptiveSettlesAtWhatTheOriginBears(t *testing.T) {
	s, _ := newStore(t)
	ev := testenv.EventID(t)
	const (
		limit, hold, ceiling, target = 40, 4, 1200, 100
		settleMs, endMs              = 120_000, 300_000
	)
	d := adaptiveEvent(t, s, ev, 20_000, hold, ceiling, queue.Adaptive{TargetLatencyMs: target, StepMs: 500, SignalTimeoutSeconds: 5})
	d.shop = &shop{limit: limit, base: 20, perVisitor: 30, windowMs: 2000}
	var (
		admits           []int64 // admission times
		settledAdmitted  int64
		reports, within  int
		wild             int
		maxRate, worstIn int
	)
	d.onTick = func(now int64, r queue.TickResult) {
		for range r.Admitted {
			admits = append(admits, now)
		}
		if now < settleMs {
			return
		}
		settledAdmitted += int64(len(r.Admitted))
		if now%250 == 0 {
			p95 := *d.shop.report().P95Ms
			reports++
			if p95 <= target {
				within++
			}
			if p95 > 2*target {
				wild++
			}
		}
	}
	d.until(endMs)

	for i, at := range admits {
		j := sort.Search(len(admits), func(k int) bool { return admits[k] >= at+10_000 })
		worstIn = max(worstIn, j-i)
	}
	c := control(t, s, ev, d.now)
	for _, ch := range c.Changes {
		maxRate = max(maxRate, ch.To)
	}
	rate := float64(settledAdmitted) / float64(endMs-settleMs) * 60_000
	ideal := float64(limit) / hold * 60
	t.Logf("settled: %.0f a minute (%.2f of the %.0f the shop bears), p95 within target in %d/%d reports, over twice it in %d; %d increases, %d decreases, highest rate %d; busiest 10 s admitted %d",
		rate, rate/ideal, ideal, within, reports, wild, c.Increases, c.Decreases, maxRate, worstIn)
	if rate < 0.6*ideal || rate > 1.05*ideal {
		t.Errorf("settled rate %.0f a minute, want 60%% to 105%% of %.0f", rate, ideal)
	}
	if within < reports*8/10 || wild > reports*5/100 {
		t.Errorf("p95 within the target in %d of %d reports (want 80%%), over twice it in %d (want at most 5%%)", within, reports, wild)
	}
	if burst := (ceiling + 11) / 12; worstIn > ceiling/6+burst {
		t.Errorf("a 10 s window admitted %d, above the ceiling's %d + burst %d", worstIn, ceiling/6, burst)
	}
	if maxRate > ceiling {
		t.Errorf("the rate reached %d, above the ceiling %d", maxRate, ceiling)
	}
	if c.Decreases == 0 || c.Increases == 0 {
		t.Errorf("the controller never found the limit: %+v", c)
	}
}

// TestAdaptiveBacksOffOnErrorsAndRecovers: a healthy shop lets the rate
// grow; once half its answers fail, the rate falls within 3 steps and keeps
// falling; once it recovers, the rate grows again.
func TestAdaptiveBacksOffOnErrorsAndRecovers(t *testing.T) {
	s, _ := newStore(t)
	ev := testenv.EventID(t)
	d := adaptiveEvent(t, s, ev, 20_000, 2, 6000, queue.Adaptive{TargetLatencyMs: 1000, StepMs: 500, SignalTimeoutSeconds: 5})
	d.shop = &shop{limit: 1_000_000, base: 20, windowMs: 1000}
	d.until(30_000)
	healthy := control(t, s, ev, d.now)
	if healthy.AdmitPerMinute <= 600 || healthy.Reason != queue.ReasonHealthy {
		t.Fatalf("a healthy shop's rate stayed at %d (%s: %s)", healthy.AdmitPerMinute, healthy.Reason, healthy.Detail)
	}

	d.shop.failing = true
	failedAt := d.now
	d.until(failedAt + 3*500 + 100)
	first := control(t, s, ev, d.now)
	if first.AdmitPerMinute >= healthy.AdmitPerMinute || first.Reason != queue.ReasonErrors {
		t.Fatalf("3 steps after the errors began the rate is %d (was %d; %s: %s)", first.AdmitPerMinute, healthy.AdmitPerMinute, first.Reason, first.Detail)
	}
	d.until(failedAt + 10_000)
	low := control(t, s, ev, d.now)
	if low.AdmitPerMinute > first.AdmitPerMinute/2 {
		t.Fatalf("10 s of errors only brought the rate from %d to %d", healthy.AdmitPerMinute, low.AdmitPerMinute)
	}
	before := d.admitted
	d.until(d.now + 5000)
	if got, allowed := d.admitted-before, int64(low.AdmitPerMinute)*5/60+int64(low.AdmitPerMinute+11)/12+1; got > allowed {
		t.Fatalf("at %d a minute the failing shop got %d in 5 s, more than %d", low.AdmitPerMinute, got, allowed)
	}

	d.shop.failing = false
	d.until(d.now + 20_000)
	back := control(t, s, ev, d.now)
	if back.AdmitPerMinute <= low.AdmitPerMinute || back.Reason != queue.ReasonHealthy {
		t.Fatalf("after recovery the rate is %d (was %d; %s: %s)", back.AdmitPerMinute, low.AdmitPerMinute, back.Reason, back.Detail)
	}
	t.Logf("healthy %d, 3 steps into the errors %d, after 10 s %d, 20 s after recovery %d a minute", healthy.AdmitPerMinute, first.AdmitPerMinute, low.AdmitPerMinute, back.AdmitPerMinute)
}

// TestAdaptiveStopsWithoutSignal: before any report nobody is admitted;
// reports start admission; reports that stop for longer than the timeout
// stop it again, and the rate comes back with them. With onSignalLoss
// "keep" admission goes on at the last rate.
func TestAdaptiveStopsWithoutSignal(t *testing.T) {
	s, _ := newStore(t)
	for _, loss := range []string{queue.SignalLossStop, queue.SignalLossKeep} {
		t.Run(loss, func(t *testing.T) {
			ev := testenv.EventID(t)
			d := adaptiveEvent(t, s, ev, 5000, 60, 600, queue.Adaptive{TargetLatencyMs: 500, StepMs: 500, SignalTimeoutSeconds: 2, OnSignalLoss: loss})
			d.shop = &shop{limit: 1_000_000, base: 20, windowMs: 1000}
			d.silent = true
			d.until(10_000)
			if loss == queue.SignalLossStop && d.admitted != 0 {
				t.Fatalf("%d admitted before any health report", d.admitted)
			}
			if c := control(t, s, ev, d.now); !c.SignalLost || c.Reason != queue.ReasonNoSignal {
				t.Fatalf("without reports the controller says %+v", c)
			}

			d.silent = false
			d.until(20_000)
			running := control(t, s, ev, d.now)
			if d.admitted == 0 || running.SignalLost || running.AdmitPerMinute == 0 {
				t.Fatalf("reports did not start admission: %d admitted, %+v", d.admitted, running)
			}

			d.silent = true
			d.until(d.now + 2000 + 200) // past the timeout
			before := d.admitted
			d.until(d.now + 5000)
			lost := control(t, s, ev, d.now)
			switch loss {
			case queue.SignalLossStop:
				// Two stops: waiting for the first report, and this loss.
				if d.admitted != before || lost.AdmitPerMinute != 0 || lost.Rate != running.AdmitPerMinute || lost.Stops != 2 {
					t.Fatalf("lost signal: %d admitted in 5 s, controller %+v", d.admitted-before, lost)
				}
			case queue.SignalLossKeep:
				if d.admitted == before || lost.AdmitPerMinute != running.AdmitPerMinute || lost.Stops != 0 {
					t.Fatalf("lost signal with keep: %d admitted in 5 s, controller %+v (rate was %d)", d.admitted-before, lost, running.AdmitPerMinute)
				}
			}
			if !lost.SignalLost || lost.Reason != queue.ReasonNoSignal {
				t.Fatalf("lost signal not shown: %+v", lost)
			}

			d.silent = false
			d.until(d.now + 1000)
			if back := control(t, s, ev, d.now); back.SignalLost || back.AdmitPerMinute < running.AdmitPerMinute {
				t.Fatalf("reports came back but the controller says %+v (rate before %d)", back, running.AdmitPerMinute)
			}
		})
	}
}

// TestAdaptiveTwoGatewaysOneRate: two gateways (two clients) ticking at the
// same moments share one controller: the admissions never exceed one
// rate's budget, and the controller steps once a step, not twice.
func TestAdaptiveTwoGatewaysOneRate(t *testing.T) {
	srv := testredis.Start(t)
	s1, s2 := mustNew(t, srv.Client(), redisstore.Options{}), mustNew(t, srv.Client(), redisstore.Options{})
	ev := testenv.EventID(t)
	d := adaptiveEvent(t, s1, ev, 20_000, 4, 1200, queue.Adaptive{TargetLatencyMs: 500, StepMs: 1000, SignalTimeoutSeconds: 5, StartAdmitPerMinute: 120, IncreasePerStep: 60})
	d.shop = &shop{limit: 1_000_000, base: 20, windowMs: 1000}
	d.stores = []*redisstore.Store{s2}
	var budget, burst float64 // what one rate allows: its integral over time, and its largest bucket
	last := int64(0)
	d.onTick = func(now int64, _ queue.TickResult) {
		st := control(t, s1, ev, now)
		if last > 0 {
			budget += float64(st.AdmitPerMinute) * float64(now-last) / 60_000
		}
		burst = max(burst, math.Ceil(float64(st.AdmitPerMinute)/12))
		last = now
	}
	d.until(60_000)
	cs := control(t, s1, ev, d.now)
	if float64(d.admitted) > budget+burst+1 {
		t.Fatalf("two gateways admitted %d, more than one rate's %0.f + burst %0.f", d.admitted, budget, burst)
	}
	steps := map[int64]int{}
	for _, ch := range cs.Changes {
		steps[ch.At]++
		if steps[ch.At] > 1 {
			t.Fatalf("two changes at %d: %+v", ch.At, cs.Changes)
		}
	}
	for i := 1; i < len(cs.Changes); i++ {
		if gap := cs.Changes[i-1].At - cs.Changes[i].At; gap < 1000 && cs.Changes[i].Reason != queue.ReasonStart {
			t.Fatalf("changes %d ms apart, closer than a step: %+v", gap, cs.Changes)
		}
	}
	t.Logf("two gateways admitted %d against one rate's budget %.0f; %d changes, rate now %d", d.admitted, budget, len(cs.Changes), cs.AdmitPerMinute)
}

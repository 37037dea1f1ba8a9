package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack/promtext"
	"github.com/waitq/waitq/internal/tools/loadgen/latency"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// Fixed settings of "loadgen admit".
const (
	// admitReleases are the releases measured (release → the next user's
	// admitted frame on the other gateway), admitReleaseRate a second.
	admitReleases    = 200
	admitReleaseRate = 20
	// admitWait bounds one user's wait for the admitted frame: longer than
	// the slot monitor's default tick (5 s), which admits when the fast
	// track is off.
	admitWait = 20 * time.Second
	// admitJoinEvent has room for every user; admitReleaseEvent is full,
	// so a slot frees only when a holder releases it.
	admitJoinEvent    = "admit-join"
	admitReleaseEvent = "admit-release"
)

// admitConfig are the settings of "loadgen admit".
type admitConfig struct {
	shown
	users int // joins measured, at rate a second
	rate  int
}

// bind declares the admit flags.
func (c *admitConfig) bind(s *settings) {
	s.intVar(&c.users, "users", 1000, 1, 20_000, "joins measured (join → admitted frame) on an event with room")
	s.intVar(&c.rate, "rate", 100, 1, 1_000, "joins a second (steady)")
}

// admitResult is what one mode (fast track on or off) measured.
type admitResult struct {
	join, release   latency.Sorted
	joinMissing     int // users whose admitted frame never came (or never joined)
	releaseMissing  int
	failures        tally
	admittedByTicks float64 // users the gateways' slot monitors admitted
}

// RunAdmit measures how soon people get in: join → admitted frame on an
// event with room, and release → the next user's admitted frame on the
// other of two gateways, once with the fast track on and once off (only
// the slot monitor's default 5 s tick admits), each on a stack of its own in
// the same run.
func RunAdmit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg admitConfig
	if ok, err := begin("admit", &cfg, args, stdout, stderr); !ok {
		return err
	}
	var results [2]*admitResult // fast track on, off
	for i, fast := range []bool{true, false} {
		fmt.Fprintf(stderr, "  fast track %v\n", fast)
		r, err := measureAdmit(ctx, cfg, fast, stdout, stderr)
		if err != nil {
			return fmt.Errorf("fast track %v: %w", fast, err)
		}
		results[i] = r
	}
	printAdmit(stdout, cfg, results[0], results[1])
	return nil
}

// measureAdmit starts producer-api, ingest-consumer and two ws-gateways in
// this process over a stack of their own, with the services' defaults but
// the fast track, and the two events, and runs both measurements on them.
func measureAdmit(ctx context.Context, cfg admitConfig, fast bool, stdout, stderr io.Writer) (*admitResult, error) {
	events := map[string]string{}
	for id, capacity := range map[string]int{admitJoinEvent: cfg.users + 10, admitReleaseEvent: admitReleases} {
		events[id] = fmt.Sprintf(`{"capacity":%d,"holdSeconds":600,"partitions":%d}`, capacity, benchPartitions)
	}
	s, err := startStack(ctx, stackSpec{slow: !fast, producer: true, events: events, ingest: true, gateways: 2}, stderr)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if fast {
		fmt.Fprintf(stdout, "target   producer-api, ingest-consumer and two ws-gateways in-process (service defaults: monitor tick 5s), kfake in-process, redis-server %s child; %d partitions\n",
			redisVersion(ctx, s.client), benchPartitions)
	}
	c := servicesClient()
	defer c.CloseIdleConnections()
	r := &admitResult{failures: newTally()}
	if err := measureJoins(ctx, c, s, cfg, r, stderr); err != nil {
		return nil, err
	}
	if err := measureReleases(ctx, c, s, r, stderr); err != nil {
		return nil, err
	}
	for _, gw := range s.gateways {
		m, err := promtext.Scrape(ctx, c, gw+"/metrics")
		if err != nil {
			return nil, err
		}
		r.admittedByTicks += m["waitq_admitted_total"]
	}
	return r, nil
}

// measureJoins has cfg.users people join the event with room at cfg.rate a
// second, each then watching from one of the gateways in turn, and records
// join request → admitted frame.
func measureJoins(ctx context.Context, c *http.Client, s *infra, cfg admitConfig, r *admitResult, stderr io.Writer) error {
	var mu sync.Mutex // guards r
	var wg sync.WaitGroup
	every := time.Second / time.Duration(cfg.rate)
	start := time.Now()
	for i := range cfg.users {
		if !clock.SleepUntil(ctx, start.Add(time.Duration(i)*every)) {
			break
		}
		wg.Go(func() {
			t0 := time.Now()
			class := "join"
			j, err := joinAs(ctx, c, s.producer, admitJoinEvent, fmt.Sprintf("j%05d", i))
			if err == nil {
				class = "admitted frame"
				_, err = watchUntilAdmitted(ctx, s.gateways[i%2], j.StatusURL)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.failures.add(class, err.Error())
				return
			}
			r.join = append(r.join, time.Since(t0))
		})
	}
	wg.Wait()
	slices.Sort(r.join)
	r.joinMissing = cfg.users - len(r.join)
	fmt.Fprintf(stderr, "  joins: %d admitted frames, %d missing, %.1fs\n", len(r.join), r.joinMissing, time.Since(start).Seconds())
	return ctx.Err()
}

// measureReleases fills the full event with admitReleases holders watching
// from gateway A, puts as many people in line behind them watching from
// gateway B, then releases the holders through A at admitReleaseRate a second:
// release k's slot goes to the k-th in line, and release request → that
// user's admitted frame on B is recorded.
func measureReleases(ctx context.Context, c *http.Client, s *infra, r *admitResult, stderr io.Writer) error {
	n := admitReleases
	tokens := make([]string, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n { // holders, admitted at once or at the next tick
		j, err := joinAs(ctx, c, s.producer, admitReleaseEvent, fmt.Sprintf("h%05d", i))
		if err != nil {
			return fmt.Errorf("holder %d: %w", i, err)
		}
		wg.Go(func() { tokens[i], errs[i] = watchUntilAdmitted(ctx, s.gateways[0], j.StatusURL) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("holders: %w", err)
	}
	waiters := make([]producer.JoinResponse, n)
	for i := range n { // one after another: the line is in this order
		j, err := joinAs(ctx, c, s.producer, admitReleaseEvent, fmt.Sprintf("w%05d", i))
		if err != nil {
			return fmt.Errorf("waiter %d: %w", i, err)
		}
		waiters[i] = j
	}
	if err := waitLineLength(ctx, s, admitReleaseEvent, int64(n)); err != nil {
		return err
	}
	admittedAt := make([]time.Time, n)
	for i, j := range waiters {
		wg.Go(func() {
			if _, err := watchUntilAdmitted(ctx, s.gateways[1], j.StatusURL); err == nil {
				admittedAt[i] = time.Now()
			}
		})
	}
	time.Sleep(500 * time.Millisecond) // the waiters' sockets are greeted
	releasedAt := make([]time.Time, n)
	every := time.Second / time.Duration(admitReleaseRate)
	start := time.Now()
	for k := range n {
		if !clock.SleepUntil(ctx, start.Add(time.Duration(k)*every)) {
			break
		}
		releasedAt[k] = time.Now()
		if err := releaseSlot(ctx, c, s.gateways[0], admitReleaseEvent, tokens[k]); err != nil {
			return fmt.Errorf("release %d: %w", k, err)
		}
	}
	wg.Wait()
	for k, at := range admittedAt {
		if !at.IsZero() && !releasedAt[k].IsZero() {
			r.release = append(r.release, at.Sub(releasedAt[k]))
		}
	}
	slices.Sort(r.release)
	r.releaseMissing = n - len(r.release)
	fmt.Fprintf(stderr, "  releases: %d admitted frames on the other gateway, %d missing\n", len(r.release), r.releaseMissing)
	return ctx.Err()
}

// waitLineLength waits until event's waiting line holds n users.
func waitLineLength(ctx context.Context, st *infra, event string, n int64) error {
	var got int64
	return poll(ctx, 30*time.Second, 20*time.Millisecond, func() (bool, error) {
		var err error
		got, err = st.client.ZCard(ctx, redisstore.WaitingKey(event)).Result()
		return err == nil && got == n, err
	}, func(err error) error {
		return fmt.Errorf("the line of %s holds %d of %d after 30s (%v)", event, got, n, err)
	})
}

// printAdmit prints the admit table and its summary rows.
func printAdmit(w io.Writer, cfg admitConfig, on, off *admitResult) {
	row := func(what string, fast bool, l latency.Sorted, missing int, r *admitResult) {
		fmt.Fprintf(w, "admit  %-30s fast-track %-5v  n %5d  p50 %9s  p99 %9s  max %9s  missing %d  admitted-by-monitor-ticks %.0f\n",
			what, fast, len(l), report.Millis(l.Percentile(0.5)), report.Millis(l.Percentile(0.99)), report.Millis(l.Percentile(1)), missing, r.admittedByTicks)
	}
	fmt.Fprintln(w)
	row("join → admitted", true, on.join, on.joinMissing, on)
	row("join → admitted", false, off.join, off.joinMissing, off)
	row("release → next admitted (B)", true, on.release, on.releaseMissing, on)
	row("release → next admitted (B)", false, off.release, off.releaseMissing, off)
	on.failures.print(w, "admit  failures with the fast track on: ")
	off.failures.print(w, "admit  failures with the fast track off: ")
	p := func(l latency.Sorted) string {
		return fmt.Sprintf("p50 %s, p99 %s", report.Millis(l.Percentile(0.5)), report.Millis(l.Percentile(0.99)))
	}
	report.Summary(w, fmt.Sprintf("join → admitted frame with room, %d users at %d/s", cfg.users, cfg.rate), p(on.join),
		"fast track off: "+p(off.join), float64(on.join.Percentile(0.99)), float64(off.join.Percentile(0.99)),
		"p50 < 50 ms, p99 < 250 ms: "+met(on.join.Percentile(0.5) < 50*time.Millisecond && on.join.Percentile(0.99) < 250*time.Millisecond && on.joinMissing == 0))
	report.Summary(w, fmt.Sprintf("release → next user's admitted frame on another gateway, %d releases at %d/s", admitReleases, admitReleaseRate), p(on.release),
		"fast track off: "+p(off.release), float64(on.release.Percentile(0.99)), float64(off.release.Percentile(0.99)),
		"p99 < 250 ms: "+met(on.release.Percentile(0.99) < 250*time.Millisecond && on.releaseMissing == 0))
}

// met says whether a goal was met.
func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

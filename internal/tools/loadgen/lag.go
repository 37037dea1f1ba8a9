package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/tools/loadgen/latency"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// Fixed settings of "loadgen lag".
const (
	// lagTick is the period of the pacer and of the visibility poller.
	lagTick = time.Millisecond
	// lagPollBatch is the most ZSCOREs of one poll: the oldest pending
	// samples first, so a backlog cannot turn the poller into load on Redis.
	lagPollBatch = 512
	// lagPollTimeout bounds one pipelined poll.
	lagPollTimeout = time.Second
	// lagSettle is how long after the last join unseen samples are still
	// looked for before they count as never seen.
	lagSettle = 10 * time.Second
	// lagDrain bounds the workers after the offered window: tickets already
	// handed out are still sent within it.
	lagDrain = 15 * time.Second
	// lagProbes joins are sent, and awaited in the waiting line, before the
	// run, so that the consumer group has formed and every partition is
	// being consumed (64 users miss one of 6 partitions with p < 1e-4).
	lagProbes = 64
	// lagProbeLimit bounds the wait for the probes.
	lagProbeLimit = 60 * time.Second
)

// lagConfig are the settings of "loadgen lag".
type lagConfig struct {
	shown
	rate        int           // joins offered per second
	duration    time.Duration // offered window
	concurrency int           // keep-alive HTTP clients
	sample      int           // every sample-th join is followed into Redis
}

// total returns the number of joins offered over the window.
func (c *lagConfig) total() int64 {
	return int64(math.Round(float64(c.rate) * c.duration.Seconds()))
}

// bind declares the lag flags.
func (c *lagConfig) bind(s *settings) {
	s.intVar(&c.rate, "rate", 20_000, 1, 200_000, "joins offered per second (open loop)")
	s.durMax(&c.duration, "d", 10*time.Second, maxDuration, "how long joins are offered (at most 120s)")
	s.intVar(&c.concurrency, "c", 256, 1, maxConcurrency, "keep-alive HTTP clients sending the offered joins")
	s.intVar(&c.sample, "sample", 50, 1, 1_000_000, "follow every Nth join into Redis")
	s.check(func() error {
		if n := c.total(); c.rate >= 1 && c.duration > 0 && (n < 1 || n > maxRequests) {
			return fmt.Errorf("-rate × -d = %d joins: must be between 1 and %d", n, maxRequests)
		}
		return nil
	})
}

// RunLag measures how long after its 202 a join becomes visible in the
// waiting line (or among the holders, admitted by the fast track), at a
// fixed offered rate, through producer-api, the broker and
// the ingest consumer, all started here.
func RunLag(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg lagConfig
	if ok, err := begin("lag", &cfg, args, stdout, stderr); !ok {
		return err
	}

	st, err := startStack(ctx, stackSpec{producer: true, events: benchEvents, ingest: true}, stderr)
	if err != nil {
		return err
	}
	defer st.close()
	fmt.Fprintf(stdout, "target   producer-api and ingest-consumer in-process (service defaults), kfake in-process, redis-server %s child; %d partitions\n",
		redisVersion(ctx, st.client), benchPartitions)

	url := st.producer + "/v1/events/" + benchEvent + "/queue"
	lc := newLoadClient(cfg.concurrency)
	defer lc.Close()
	runID := stack.RandomHex(3)
	if err := probe(ctx, lc, url, "l"+runID+"p", st.client, stderr); err != nil {
		return err
	}
	res, err := offer(ctx, lc, url, cfg, &watcher{rc: st.client}, "l"+runID+"m", stderr)
	if err != nil {
		return err
	}
	printLag(stdout, cfg, &res)
	return nil
}

// probe sends lagProbes joins one after another and waits until the consumer
// has put them all into the waiting line.
func probe(ctx context.Context, lc *loadClient, url, prefix string, rc redis.UniversalClient, stderr io.Writer) error {
	start := time.Now()
	w := &watcher{rc: rc}
	ph := phase{label: "lag probe", duration: lagProbeLimit, maxReqs: lagProbes, workers: 1}
	joins, err := measure(ctx, lc, target{name: "probe"}, ph, w.follow(lc.http, url, prefix, 1), stderr)
	if err == nil && joins.errs.total() > 0 {
		err = fmt.Errorf("%d joins failed, e.g. %s", joins.errs.total(), joins.errs.first())
	}
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	w.finish(lagProbeLimit)
	res, err := w.run(ctx)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if res.unseen > 0 {
		return fmt.Errorf("probe: %d of %d joins neither in the waiting line nor holding %s after they were sent (polls %d, poll errors %d, last: %v): is the ingest consumer consuming?",
			res.unseen, lagProbes, lagProbeLimit, res.polls, res.pollErrors, res.lastErr)
	}
	fmt.Fprintf(stderr, "  probe: %d joins in the waiting line %.2fs after the first was sent\n", lagProbes, time.Since(start).Seconds())
	return nil
}

// offerResult is what the open-loop run measured.
type offerResult struct {
	joins   result // 202 latencies and failed requests by class
	skipped int64  // offered joins not sent: every client was busy
	watch   watchResult
}

// offer offers cfg.total() joins at cfg.rate per second to url (open loop:
// the pace does not bend to the answers) from cfg.concurrency keep-alive
// clients, follows every cfg.sample-th 202 into the waiting line with w, and
// returns what it measured. Progress goes to stderr once a second.
func offer(ctx context.Context, lc *loadClient, url string, cfg lagConfig, w *watcher, prefix string, stderr io.Writer) (offerResult, error) {
	var res offerResult
	// One ticket per client at most waits in the channel; see pace.
	tickets := make(chan struct{}, cfg.concurrency)
	// pace closes tickets when ctx ends.
	take := func() bool {
		_, ok := <-tickets
		return ok
	}
	var watchErr error
	var wg sync.WaitGroup
	wg.Go(func() { res.watch, watchErr = w.run(ctx) })
	wg.Go(func() { res.skipped = pace(ctx, tickets, cfg) })
	ph := phase{label: "lag open loop", duration: cfg.duration + lagDrain, maxReqs: cfg.total(), workers: cfg.concurrency, take: take}
	var err error
	res.joins, err = measure(ctx, lc, target{"producer-api", url}, ph, w.follow(lc.http, url, prefix, int64(cfg.sample)), stderr)
	w.finish(lagSettle)
	if err == nil {
		fmt.Fprintf(stderr, "  waiting at most %s for the samples not yet in the waiting line\n", lagSettle)
	}
	wg.Wait()
	if err = cmp.Or(err, watchErr); err != nil {
		return res, fmt.Errorf("lag: %w", err)
	}
	return res, nil
}

// pace offers cfg.total() joins evenly over cfg.duration at cfg.rate per
// second: every lagTick it puts the tickets due since the last tick into
// tickets, and closes tickets when all were offered or ctx ends. It never
// waits for a client: a ticket that does not fit into the channel (capacity
// one per client, so every client is busy and one ticket waits for each) is
// dropped and counted in skipped, so the offered rate stays fixed however
// slow the answers are.
func pace(ctx context.Context, tickets chan<- struct{}, cfg lagConfig) (skipped int64) {
	defer close(tickets)
	t := time.NewTicker(lagTick)
	defer t.Stop()
	start, total := time.Now(), cfg.total()
	for issued := int64(0); issued < total; {
		select {
		case <-ctx.Done():
			return skipped
		case <-t.C:
		}
		due := total
		if el := time.Since(start); el < cfg.duration {
			due = min(total, int64(el.Seconds()*float64(cfg.rate)))
		}
		for ; issued < due; issued++ {
			select {
			case tickets <- struct{}{}:
			default:
				skipped++
			}
		}
	}
	return skipped
}

// printLag prints the lag table.
func printLag(w io.Writer, cfg lagConfig, r *offerResult) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "lag    offered %d/s for %s (%d joins)  achieved %.0f/s (202s)  not sent %d (all %d clients busy)\n",
		cfg.rate, cfg.duration, cfg.total(), r.joins.rate(), r.skipped, cfg.concurrency)
	printRows(w, "joins  ", &r.joins)
	ack, n := r.watch.afterAck, len(r.watch.afterAck)
	row := func(label string, l latency.Sorted) {
		fmt.Fprintf(w, "lag    %-13s  p50 %s  p99 %s  max %s  min %s  over %d samples (every %dth join answered 202)\n",
			label, report.Millis(l.Percentile(0.50)), report.Millis(l.Percentile(0.99)), report.Millis(l.Percentile(1)), report.Millis(l.Percentile(0)), n, cfg.sample)
	}
	row("202→visible", ack)
	row("start→visible", r.watch.afterStart)
	fmt.Fprintf(w, "lag    never seen within %s after the last join: %d of %d samples; already in the line at their first poll: %d\n",
		lagSettle, r.watch.unseen, n+r.watch.unseen, r.watch.atFirst)
	fmt.Fprintf(w, "lag    polls %d (pipelined ZSCORE of at most %d pending samples every %s; seen = time of the answer)  poll errors %d",
		r.watch.polls, lagPollBatch, lagTick, r.watch.pollErrors)
	if r.watch.lastErr != nil {
		fmt.Fprintf(w, ", last: %s", report.OneLine(r.watch.lastErr.Error()))
	}
	fmt.Fprintln(w)
	printErrors(w, &r.joins)
	report.Summary(w, fmt.Sprintf("join → visible in line, %d/s offered, %.0f/s answered 202", cfg.rate, r.joins.rate()),
		fmt.Sprintf("p50 %s, p99 %s after the 202 (%d samples, %d never seen)", report.Millis(ack.Percentile(0.5)), report.Millis(ack.Percentile(0.99)), n, r.watch.unseen),
		"", 0, 0, "p99 < 250 ms at 20k joins/s")
}

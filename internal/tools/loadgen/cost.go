package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// costConfig are the settings of "loadgen cost".
type costConfig struct {
	shown
	joins       int
	rounds      int
	concurrency int
	maxBatch    int
	binDir      string
	timeout     time.Duration
	joinKeys    bool
}

// bind declares the cost flags.
func (c *costConfig) bind(s *settings) {
	s.intVar(&c.joins, "joins", 100_000, 1_000, maxRequests, "joins each program and its baseline are measured over, each round")
	s.intVar(&c.rounds, "rounds", 3, 1, maxRounds, "times each program and its baseline are measured, alternating (the figures are the medians)")
	s.intVar(&c.concurrency, "c", 64, 1, maxConcurrency, "concurrent keep-alive HTTP clients of the join measurements")
	s.intVar(&c.maxBatch, "max-batch", 500, 1, maxIngestBatch, "WAITQ_MAX_BATCH of ingest-consumer and the baseline's batches")
	s.durMax(&c.timeout, "timeout", 120*time.Second, maxIngestTimeout, "bound of each step: a measurement, the pre-fill")
	s.boolVar(&c.joinKeys, "join-keys", true, "each join carries an Idempotency-Key, as the waiting room page's do (false: none, as an API client may send)")
	s.fs.StringVar(&c.binDir, "bin-dir", "", "directory of the producer-api, ingest-consumer and kfake-broker binaries (empty: go build them from the module in the working directory into a temporary one)")
}

// costSample is what one measurement of one program saw: the CPU time its
// process, the broker's and Redis's took over joins joins.
type costSample struct {
	cpuMark
	joins int
	p99   time.Duration            // join measurements: of the 202 answers
	rate  float64                  // join measurements: 202 answers a second
	cmds  map[string]time.Duration // ingest measurements: Redis's time by command, from the start (joins before the first look too)
}

// The parts of a sample the report reads.
func progCPU(s costSample) time.Duration   { return s.prog }
func brokerCPU(s costSample) time.Duration { return s.broker }
func redisCPU(s costSample) time.Duration  { return s.redis }

// perJoin returns what of returns of s a join, in µs.
func (s costSample) perJoin(of func(costSample) time.Duration) float64 {
	if s.joins == 0 {
		return 0
	}
	return float64(of(s).Microseconds()) / float64(s.joins)
}

// costPair is one round: a program and its baseline, measured one after the
// other.
type costPair struct{ prog, base costSample }

// ratio returns the round's ratio of what of returns a join.
func (p costPair) ratio(of func(costSample) time.Duration) float64 {
	if b := p.base.perJoin(of); b > 0 {
		return p.prog.perJoin(of) / b
	}
	return 0
}

// RunCost measures the CPU time a join costs each program, each in a
// process of its own, against a baseline program that does the same job
// with nothing else (cost_baseline.go), in alternating rounds.
func RunCost(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg costConfig
	if ok, err := begin("cost", &cfg, args, stdout, stderr); !ok {
		return err
	}
	cs, err := startCostStack(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer cs.close()
	fmt.Fprintf(stdout, "target   each program a process of its own: binaries in %s, kfake-broker, redis-server %s; baselines: loadgen baseline producer|ingest\n",
		cs.dir, redisVersion(ctx, cs.client))
	joins, err := cs.joins(ctx, cfg)
	if err != nil {
		return err
	}
	ingest, fast, err := cs.ingest(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	rounds := func(name string, pairs []costPair, of func(costSample) time.Duration) {
		printRounds(stdout, "cost  rounds  "+name+"/baseline", pairs, func(p costPair) float64 { return p.ratio(of) }, "  (CPU per join, alternating; median %.2f)\n")
	}
	rounds("producer-api", joins, progCPU)
	rounds("ingest-consumer", ingest, progCPU)
	rounds("redis(ingest)", ingest, redisCPU)
	p99, baseP99 := medians(joins, func(s costSample) float64 { return float64(s.p99) / float64(time.Millisecond) })
	rate, baseRate := medians(joins, func(s costSample) float64 { return s.rate })
	printCostLine(stdout, "producer-api", joins, progCPU, fmt.Sprintf(" p99_ms=%.1f baseline_p99_ms=%.1f joins_per_s=%.0f baseline_joins_per_s=%.0f clients=%d",
		p99, baseP99, rate, baseRate, cfg.concurrency))
	printCostLine(stdout, "kfake-broker(joins)", joins, brokerCPU, "")
	printCostLine(stdout, "ingest-consumer", ingest, progCPU, "")
	printCostLine(stdout, "kfake-broker(ingest)", ingest, brokerCPU, "")
	printCostLine(stdout, "redis", ingest, redisCPU, " (plain joins behind everyone, fast track off)")
	mid := median(ingest, func(p costPair) float64 { return p.ratio(redisCPU) })
	fastPair := []costPair{{prog: fast, base: mid.base}}
	printCostLine(stdout, "redis-fast-track", fastPair, redisCPU, " (the same joins with the fast track on and the event full; baseline: the median round's)")
	printCostLine(stdout, "ingest-consumer-fast-track", fastPair, progCPU, "")
	costSummary(stdout, fmt.Sprintf("CPU a join costs producer-api, %d clients (`loadgen cost`)", cfg.concurrency), "echo + kafka-go writer", joins)
	costSummary(stdout, "CPU a join costs ingest-consumer (`loadgen cost`)", "kafka-go reader + ZADD pipeline", ingest)
	printRedisProfile(stdout, "ingest-consumer", mid.prog, cfg.joins)
	printRedisProfile(stdout, "baseline", mid.base, cfg.joins)
	printRedisProfile(stdout, "ingest-consumer-fast-track", fast, cfg.joins)
	return nil
}

// printRedisProfile prints where Redis's time went in an ingest
// measurement, µs a join by command (a script's own time less that of the
// commands it called: "lua"), the largest first.
func printRedisProfile(w io.Writer, program string, s costSample, joins int) {
	times := maps.Clone(s.cmds)
	for cmd, t := range s.cmds {
		switch cmd {
		case "evalsha", "eval":
			times["lua"] += t
			delete(times, cmd)
		case "script|load":
		default:
			times["lua"] -= t // without scripts, below zero: not printed
		}
	}
	fmt.Fprintf(w, "cost: redis-time program=%s", program)
	for _, name := range slices.SortedFunc(maps.Keys(times), func(a, b string) int { return cmp.Compare(times[b], times[a]) }) {
		if us := float64(times[name].Microseconds()) / float64(joins); us >= 0.005 {
			fmt.Fprintf(w, " %s=%.2f", strings.ReplaceAll(name, "|", "_"), us)
		}
	}
	fmt.Fprintln(w, " (µs a join, INFO commandstats; the median round)")
}

// medians returns the medians over the rounds of f of the program's
// samples and of its baseline's.
func medians(pairs []costPair, f func(costSample) float64) (prog, base float64) {
	return medianOf(pairs, func(p costPair) float64 { return f(p.prog) }), medianOf(pairs, func(p costPair) float64 { return f(p.base) })
}

// medianOf returns the median of f over pairs.
func medianOf(pairs []costPair, f func(costPair) float64) float64 { return f(median(pairs, f)) }

// costSummary prints the summary row of a program's CPU per join against its
// baseline's (the medians over the rounds), for bench/RESULTS.md.
func costSummary(w io.Writer, what, baseline string, pairs []costPair) {
	x, y := medians(pairs, func(s costSample) float64 { return s.perJoin(progCPU) })
	report.Summary(w, what, fmt.Sprintf("%.1f µs", x), fmt.Sprintf("%s %.1f µs", baseline, y), x, y, "≤ 1.3")
}

// printCostLine prints the cost line of a program: the medians over the
// rounds of its CPU per join, its baseline's, and their ratio.
func printCostLine(w io.Writer, program string, pairs []costPair, of func(costSample) time.Duration, extra string) {
	x, y := medians(pairs, func(s costSample) float64 { return s.perJoin(of) })
	base := "baseline_cpu_us_per_join"
	if strings.HasPrefix(program, "redis") {
		base = "baseline"
	}
	fmt.Fprintf(w, "cost: program=%s cpu_us_per_join=%.2f %s=%.2f ratio=%.2f%s\n", program, x, base, y, medianOf(pairs, func(p costPair) float64 { return p.ratio(of) }), extra)
}

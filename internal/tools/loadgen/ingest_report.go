package loadgen

import (
	"fmt"
	"io"
	"time"

	"github.com/waitq/waitq/internal/rebuild"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// ingestRound is one alternation of the consumer and the ZADD pipeline.
type ingestRound struct {
	cons consumeResult
	zadd baselineResult
}

// ratio is the round's consumer rate over the pipeline's.
func (r ingestRound) ratio() float64 {
	if r.cons.elapsed <= 0 {
		return 0
	}
	return r.zadd.elapsed.Seconds() / r.cons.elapsed.Seconds()
}

// printIngest prints the ingest table.
func printIngest(w io.Writer, cfg ingestConfig, fill time.Duration, rounds []ingestRound, fast consumeResult, rb rebuild.Result) {
	mid := medianRound(rounds)
	c, zadd := mid.cons, mid.zadd
	rate := func(n int64, d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	n := int64(cfg.n)
	consRate := rate(n, c.elapsed)
	afterFirst := rate(n-c.atFirst, c.elapsed-c.firstWrite)
	zaddRate := rate(n, zadd.elapsed)
	perJoin := func(cpu time.Duration) float64 { return cpu.Seconds() * 1e6 / float64(n) }
	fmt.Fprintln(w)
	printRounds(w, "ingest  rounds  consumer/zadd-pipeline", rounds, ingestRound.ratio, medianTail)
	fmt.Fprintf(w, "ingest  prefill        %d msgs  %d partitions  %5.1fs  %8.0f msg/s  (kafka-go writer, setup only)\n",
		n, benchPartitions, fill.Seconds(), rate(n, fill))
	fmt.Fprintf(w, "ingest  consumer       %d msgs  max-batch %d lanes %d  %5.1fs  %8.0f msg/s  first write after %.2fs, then %.0f msg/s  written %d ignored %d dead %d retries %d commits %d commit-errors %d  Redis CPU %.2f µs/join\n",
		n, cfg.maxBatch, cfg.lanes, c.elapsed.Seconds(), consRate, c.firstWrite.Seconds(), afterFirst,
		c.stats.Written, c.stats.Ignored, c.stats.DeadLettered, c.stats.Retries, c.stats.Commits, c.stats.CommitErrors,
		perJoin(c.redisCPU))
	fmt.Fprintf(w, "ingest  zadd-pipeline  %d msgs  pipeline %d   %5.1fs  %8.0f msg/s  (one ZADD per member, one pipeline at a time)  Redis CPU %.2f µs/join\n",
		n, cfg.maxBatch, zadd.elapsed.Seconds(), zaddRate, perJoin(zadd.redisCPU))
	fastRate := rate(n, fast.elapsed)
	fmt.Fprintf(w, "ingest  fast-track     %d msgs  max-batch %d  %5.1fs  %8.0f msg/s  (the same topic again, joins admitting while there is room: admitted %d)  Redis CPU %.2f µs/join\n",
		n, cfg.maxBatch, fast.elapsed.Seconds(), fastRate, fast.stats.Admitted, perJoin(fast.redisCPU))
	rbRate := rate(rb.Messages, rb.Paused)
	fmt.Fprintf(w, "ingest  rebuild        %d msgs  %d partitions  %5.1fs  %8.0f msg/s  (FLUSHALL, then the whole topic read, folded and written back: read and fold %.2fs, event paused %.2fs)\n",
		rb.Messages, rb.Partitions, rb.Paused.Seconds(), rbRate, rb.Read.Seconds(), rb.Paused.Seconds())
	report.Ratio(w, "consumer/zadd-pipeline", consRate, zaddRate)
	report.Ratio(w, "consumer-after-first-write/zadd-pipeline", afterFirst, zaddRate)
	report.Ratio(w, "fast-track/consumer", fastRate, consRate)
	report.Summary(w, "ingest consumer into Redis", fmt.Sprintf("%.0f msg/s", consRate),
		fmt.Sprintf("go-redis ZADD pipeline %.0f msg/s", zaddRate), consRate, zaddRate, "")
	report.Summary(w, "rebuild of the event from its log after FLUSHALL", fmt.Sprintf("%.0f msg/s, paused %.1fs", rbRate, rb.Paused.Seconds()),
		fmt.Sprintf("ingest consumer %.0f msg/s", consRate), rbRate, consRate, "within 2× of the consumer")
	report.Summary(w, "ingest consumer with the fast track on", fmt.Sprintf("%.0f msg/s", fastRate),
		fmt.Sprintf("fast track off %.0f msg/s", consRate), fastRate, consRate, "cost of admission on the write path")
}

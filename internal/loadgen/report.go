package loadgen

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/pkg/kafkajoin"
)

// printMachine prints the facts the numbers depend on.
func printMachine(w io.Writer, command string) {
	fmt.Fprintf(w, "loadgen %s  %s\n", command, time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "machine  NumCPU %d  GOMAXPROCS %d  %s %s/%s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// printJoinRow prints one measured target.
func printJoinRow(w io.Writer, r *result) {
	fmt.Fprintf(w, "joins  %-12s  %d clients  %4.1fs  %7.0f req/s  p50 %s  p99 %s  max %s  ok %d  errors %d  dials %d\n",
		r.name, r.workers, r.elapsed.Seconds(), r.rate(),
		ms(r.percentile(0.50)), ms(r.percentile(0.99)), ms(r.percentile(1)), r.ok, r.errors(), r.dials)
}

// printErrors lists r's failed requests by class with one example each.
func printErrors(w io.Writer, r *result) {
	for _, class := range r.errorClasses() {
		fmt.Fprintf(w, "errors %s  %s: %d, e.g. %s\n", r.name, class, r.errs[class], oneLine(r.samples[class]))
	}
}

// firstSample returns an example of r's first error class.
func firstSample(r *result) string {
	for _, class := range r.errorClasses() {
		return class + ": " + oneLine(r.samples[class])
	}
	return ""
}

// printRatio prints a ÷ b.
func printRatio(w io.Writer, label string, a, b float64) {
	if b == 0 {
		fmt.Fprintf(w, "ratio %s n/a\n", label)
		return
	}
	fmt.Fprintf(w, "ratio %s %.2f\n", label, a/b)
}

// printSummary prints one row of the summary table that scripts/bench.sh
// puts at the top of bench/RESULTS.md: what was measured, the figure, the
// baseline measured in the same run, their ratio (none when base is 0) and
// the goal.
func printSummary(w io.Writer, what, figure, baseline string, fig, base float64, goal string) {
	ratio := "—"
	if base > 0 {
		ratio = fmt.Sprintf("%.2f", fig/base)
	}
	fmt.Fprintf(w, "summary | %s | %s | %s | %s | %s |\n", what, figure, baseline, ratio, goal)
}

// ms formats d in milliseconds.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

// oneLine shortens s to one line for the table.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// redisVersion asks the server at url for its version; "?" when it cannot.
func redisVersion(ctx context.Context, url string) string {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return "?"
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "?"
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "?"
}

// printTopicCheck compares the messages in the bench topic with the joins
// producer-api answered 202, as a check that each 202 is a message in Kafka.
func printTopicCheck(ctx context.Context, w io.Writer, brokers []string, accepted int) {
	topic := (&kafkajoin.BrokerConfig{}).Topic(benchEvent)
	n, err := topicMessages(ctx, brokers, topic)
	if err != nil {
		fmt.Fprintf(w, "check  topic %s: %v\n", topic, err)
		return
	}
	fmt.Fprintf(w, "check  topic %s holds %d messages; producer-api answered 202 to %d joins (warm-up included)\n", topic, n, accepted)
}

// topicMessages sums the end offsets of topic's partitions.
func topicMessages(ctx context.Context, brokers []string, topic string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: &kafka.Transport{ClientID: "loadgen"}}
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, fmt.Errorf("metadata: %w", err)
	}
	var reqs []kafka.OffsetRequest
	for _, t := range meta.Topics {
		for _, p := range t.Partitions {
			reqs = append(reqs, kafka.LastOffsetOf(p.ID))
		}
	}
	resp, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return 0, fmt.Errorf("list offsets: %w", err)
	}
	var sum int64
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			return 0, fmt.Errorf("partition %d: %w", po.Partition, po.Error)
		}
		sum += po.LastOffset
	}
	return sum, nil
}

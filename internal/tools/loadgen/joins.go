package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// joinsConfig are the settings of "loadgen joins".
type joinsConfig struct {
	shown
	concurrency  int
	duration     time.Duration
	maxReqs      int64
	batchTimeout string
	rounds       int
	cluster      bool
}

// bind declares the joins flags.
func (c *joinsConfig) bind(s *settings) {
	s.load(&c.concurrency, &c.duration, 64, "concurrent keep-alive HTTP clients", "duration of each measurement (at most 120s)")
	s.int64Var(&c.maxReqs, "n", 200_000, 1, maxRequests, "most requests of each measurement")
	s.fs.StringVar(&c.batchTimeout, "batch-timeout", "", "WAITQ_KAFKA_BATCH_TIMEOUT of the started producer-api (empty: the service default)")
	s.check(func() error {
		if _, err := time.ParseDuration(c.batchTimeout); c.batchTimeout != "" && err != nil {
			return fmt.Errorf("-batch-timeout: %w", err)
		}
		return nil
	})
	s.intVar(&c.rounds, "rounds", 1, 1, maxRounds, "times the bare echo handler and producer-api are measured, alternating (the rates move from run to run; the figures are the round of the median ratio)")
	s.cluster(&c.cluster)
}

// RunJoins measures joins/s through producer-api, through a bare echo handler
// with the same client and straight into
// the broker with the service's Kafka writer from as many workers; it prints
// the rows and the ratios of producer-api to each baseline.
func RunJoins(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg joinsConfig
	if ok, err := begin("joins", &cfg, args, stdout, stderr); !ok {
		return err
	}

	pt, err := startStack(ctx, stackSpec{cluster: cfg.cluster, producer: true, events: benchEvents,
		producerEnv: map[string]string{"WAITQ_KAFKA_BATCH_TIMEOUT": cfg.batchTimeout}}, stderr)
	if err != nil {
		return err
	}
	defer pt.close()
	fmt.Fprintf(stdout, "target   producer-api in-process, kfake in-process, %s; kafka batch timeout: %s\n", pt.redisKind(ctx), cmp.Or(cfg.batchTimeout, "service default"))
	echoBase, stopEcho, err := startBareEcho()
	if err != nil {
		return err
	}
	defer stopEcho()

	lc := newLoadClient(cfg.concurrency)
	defer lc.Close()
	runID := stack.RandomHex(3)
	// In each round the bare handler is measured first so that nothing the
	// producer left behind (broker log, heap) weighs on it.
	rounds := make([]joinRound, cfg.rounds)
	accepted := 0 // producer-api's 202s, warm-ups included
	for i := range rounds {
		r := &rounds[i]
		suffix := runID + strconv.Itoa(i)
		if r.echo, _, err = measureTarget(ctx, lc, cfg, target{"bare-echo", echoBase + "/v1/events/" + benchEvent + "/queue"}, "e"+suffix, stderr); err != nil {
			return err
		}
		var warmOK int
		if r.prod, warmOK, err = measureTarget(ctx, lc, cfg, target{"producer-api", pt.producer + "/v1/events/" + benchEvent + "/queue"}, "p"+suffix, stderr); err != nil {
			return err
		}
		accepted += warmOK + r.prod.ok
	}
	mid := medianRound(rounds)
	echoRes, prodRes := mid.echo, mid.prod
	// The topic is counted before the writer baseline adds to it, so that
	// the check compares producer-api's messages with its own 202s.
	var check strings.Builder
	printTopicCheck(ctx, &check, pt.Brokers(), accepted)
	writerRes, err := measureWriter(ctx, cfg, pt.Brokers(), "k"+runID, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	printRounds(stdout, "joins  rounds  producer-api/bare-echo", rounds, joinRound.ratio, medianTail)
	printRows(stdout, "joins  ", &prodRes, &writerRes, &echoRes)
	report.Ratio(stdout, "producer-api/bare-echo", prodRes.rate(), echoRes.rate())
	report.Ratio(stdout, "producer-api/kafka-writer", prodRes.rate(), writerRes.rate())
	report.Summary(stdout, fmt.Sprintf("joins through producer-api, %d clients", cfg.concurrency),
		fmt.Sprintf("%.0f/s, p50 %s, p99 %s", prodRes.rate(), report.Millis(prodRes.lat.Percentile(0.5)), report.Millis(prodRes.lat.Percentile(0.99))),
		fmt.Sprintf("bare echo handler %.0f/s", echoRes.rate()), prodRes.rate(), echoRes.rate(), "≥ 0.5, p99 < 50 ms")
	report.Summary(stdout, "publish: joins through producer-api",
		fmt.Sprintf("%.0f/s", prodRes.rate()),
		fmt.Sprintf("the service's publisher straight into the broker %.0f/s", writerRes.rate()), prodRes.rate(), writerRes.rate(), "")
	printErrors(stdout, &prodRes, &writerRes, &echoRes)
	fmt.Fprint(stdout, check.String())
	return nil
}

// joinRound is one alternation of the bare echo handler and producer-api.
type joinRound struct{ echo, prod result }

// ratio is the round's producer-api rate over the bare handler's.
func (r joinRound) ratio() float64 {
	if e := r.echo.rate(); e > 0 {
		return r.prod.rate() / e
	}
	return 0
}

// measureTarget runs the warm-up and then the recorded measurement of t. It
// also returns the number of 202 answers of the warm-up.
func measureTarget(ctx context.Context, lc *loadClient, cfg joinsConfig, t target, prefix string, stderr io.Writer) (r result, warmOK int, err error) {
	return warmThenMeasure(ctx, lc, t, cfg.concurrency, cfg.duration, warmup, cfg.maxReqs, prefix,
		func(ph phase) request { return joinsOf(lc, t.url, ph.prefix) }, stderr)
}

// printTopicCheck compares the messages in the bench topic with the joins
// producer-api answered 202, as a check that each 202 is a message in Kafka.
func printTopicCheck(ctx context.Context, w io.Writer, brokers []string, accepted int) {
	topic := kafkajoin.DefaultTopicPrefix + benchEvent
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

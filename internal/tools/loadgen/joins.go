package loadgen

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
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
	concurrency  int
	duration     time.Duration
	maxReqs      int64
	warmup       time.Duration
	producerURL  string
	adminToken   string
	batchTimeout string
	rounds       int
	cluster      bool
}

// bind declares the joins flags.
func (c *joinsConfig) bind(fs *flag.FlagSet) {
	fs.IntVar(&c.concurrency, "c", 64, "concurrent keep-alive HTTP clients")
	fs.DurationVar(&c.duration, "d", 10*time.Second, "duration of each measurement (at most 120s)")
	fs.Int64Var(&c.maxReqs, "n", 200_000, "most requests of each measurement")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "unrecorded warm-up before each measurement")
	fs.StringVar(&c.producerURL, "producer-url", "", "measure this running producer-api (loopback only) instead of starting one")
	fs.StringVar(&c.adminToken, "admin-token", "", "admin token of the producer-api named by -producer-url")
	fs.StringVar(&c.batchTimeout, "batch-timeout", "", "WAITQ_KAFKA_BATCH_TIMEOUT of the started producer-api (empty: the service default)")
	fs.IntVar(&c.rounds, "rounds", 1, "times the bare echo handler and producer-api are measured, alternating (the rates move from run to run; the figures are the round of the median ratio)")
	fs.BoolVar(&c.cluster, "redis-cluster", false, clusterFlagUsage)
}

// line returns the settings line of the joins table.
func (c *joinsConfig) line() string {
	return fmt.Sprintf("-c %d -d %s -n %d -warmup %s -rounds %d -redis-cluster=%t", c.concurrency, c.duration, c.maxReqs, c.warmup, c.rounds, c.cluster)
}

// validate checks the joins flags.
func (c *joinsConfig) validate() error {
	errs := warmedFlagErrors(c.concurrency, c.duration, c.warmup, c.maxReqs)
	errs = append(errs, roundsError(c.rounds)...)
	if c.batchTimeout != "" {
		if _, err := time.ParseDuration(c.batchTimeout); err != nil {
			errs = append(errs, fmt.Errorf("-batch-timeout: %w", err))
		}
	}
	if c.producerURL != "" {
		if err := checkLoopbackURL(c.producerURL); err != nil {
			errs = append(errs, fmt.Errorf("-producer-url: %w", err))
		}
		if c.adminToken == "" {
			errs = append(errs, errors.New("-producer-url needs -admin-token to create the bench event"))
		}
		if c.cluster {
			errs = append(errs, errors.New("-redis-cluster starts a producer-api of its own: leave out -producer-url"))
		}
		if c.batchTimeout != "" {
			errs = append(errs, errors.New("-batch-timeout applies only to the producer-api loadgen starts, not to -producer-url"))
		}
	}
	return errors.Join(errs...)
}

// checkLoopbackURL accepts only http URLs of this machine.
func checkLoopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "http" {
		return fmt.Errorf("%q: only http:// is supported", raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q: traffic must stay on this machine (127.0.0.1)", raw)
	}
	return nil
}

// RunJoins measures joins/s through producer-api, through a bare echo handler
// with the same client and, when loadgen started the broker, straight into
// the broker with the service's Kafka writer from as many workers; it prints
// the rows and the ratios of producer-api to each baseline.
func RunJoins(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg joinsConfig
	if ok, err := begin("joins", &cfg, args, stdout, stderr); !ok {
		return err
	}

	pt, err := producerBase(ctx, cfg, stdout, stderr)
	if err != nil {
		return err
	}
	defer pt.stop()
	if err := createBenchEvent(ctx, pt.base, pt.token); err != nil {
		return err
	}
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
		if r.prod, warmOK, err = measureTarget(ctx, lc, cfg, target{"producer-api", pt.base + "/v1/events/" + benchEvent + "/queue"}, "p"+suffix, stderr); err != nil {
			return err
		}
		accepted += warmOK + r.prod.ok
	}
	mid := medianRound(rounds)
	echoRes, prodRes := mid.echo, mid.prod
	// The topic is counted before the writer baseline adds to it, so that
	// the check compares producer-api's messages with its own 202s.
	var check strings.Builder
	var writerRes result
	if len(pt.brokers) > 0 {
		printTopicCheck(ctx, &check, pt.brokers, accepted)
		if writerRes, err = measureWriter(ctx, cfg, pt.brokers, "k"+runID, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout)
	printRounds(stdout, "joins", "producer-api/bare-echo", rounds)
	printJoinRow(stdout, &prodRes)
	if len(pt.brokers) > 0 {
		printJoinRow(stdout, &writerRes)
	} else {
		fmt.Fprintf(stdout, "joins  %-12s  not measured: the brokers behind -producer-url are unknown\n", "kafka-writer")
	}
	printJoinRow(stdout, &echoRes)
	report.Ratio(stdout, "producer-api/bare-echo", prodRes.rate(), echoRes.rate())
	report.Ratio(stdout, "producer-api/kafka-writer", prodRes.rate(), writerRes.rate())
	report.Summary(stdout, fmt.Sprintf("joins through producer-api, %d clients", cfg.concurrency),
		fmt.Sprintf("%.0f/s, p50 %s, p99 %s", prodRes.rate(), report.Millis(prodRes.lat.Percentile(0.5)), report.Millis(prodRes.lat.Percentile(0.99))),
		fmt.Sprintf("bare echo handler %.0f/s", echoRes.rate()), prodRes.rate(), echoRes.rate(), "≥ 0.5, p99 < 50 ms")
	report.Summary(stdout, "publish: joins through producer-api",
		fmt.Sprintf("%.0f/s", prodRes.rate()),
		fmt.Sprintf("the service's publisher straight into the broker %.0f/s", writerRes.rate()), prodRes.rate(), writerRes.rate(), "")
	printErrors(stdout, &prodRes)
	printErrors(stdout, &writerRes)
	printErrors(stdout, &echoRes)
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
	return warmThenMeasure(ctx, lc, t, cfg.concurrency, cfg.duration, cfg.warmup, cfg.maxReqs, prefix,
		func(ph phase) request { return joinsOf(lc, t.url, ph.prefix) }, stderr)
}

// producerTarget is the producer-api under measurement.
type producerTarget struct {
	base    string   // http://host:port
	token   string   // admin token
	brokers []string // its brokers when loadgen started them, else nil
	stop    func()
}

// producerBase returns the producer-api to measure, starting kfake,
// redis-server and producer-api unless cfg names a running one.
func producerBase(ctx context.Context, cfg joinsConfig, stdout, stderr io.Writer) (producerTarget, error) {
	if cfg.producerURL != "" {
		fmt.Fprintf(stdout, "target   %s (external)\n", cfg.producerURL)
		return producerTarget{base: strings.TrimRight(cfg.producerURL, "/"), token: cfg.adminToken, stop: func() {}}, nil
	}
	st, err := startInfra(ctx, cfg.cluster)
	if err != nil {
		return producerTarget{}, err
	}
	token := stack.RandomHex(16)
	base, stopProducer, err := startProducer(ctx, st, cfg.batchTimeout, token, nil, stderr)
	if err != nil {
		st.Close()
		return producerTarget{}, err
	}
	bt := cfg.batchTimeout
	if bt == "" {
		bt = "service default"
	}
	fmt.Fprintf(stdout, "target   producer-api in-process, kfake in-process, %s; kafka batch timeout: %s\n", st.redisKind(ctx), bt)
	return producerTarget{base: base, token: token, brokers: st.Brokers(), stop: func() { stopProducer(); st.Close() }}, nil
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

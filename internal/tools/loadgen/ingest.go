package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/rebuild"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// Bounds and fixed settings of "loadgen ingest".
const (
	maxIngestTimeout = 10 * time.Minute
	maxIngestBatch   = 100_000
	maxIngestLanes   = 64
	prefillChunk     = 20_000 // messages per WriteMessages call
	pollInterval     = 50 * time.Millisecond
)

// ingestConfig are the settings of "loadgen ingest".
type ingestConfig struct {
	shown
	n        int
	maxBatch int
	lanes    int
	rounds   int
	timeout  time.Duration
	cluster  bool
}

// bind declares the ingest flags.
func (c *ingestConfig) bind(s *settings) {
	s.intVar(&c.n, "n", 200_000, 1, maxRequests, "join messages put in the topic before the consumer starts")
	s.intVar(&c.maxBatch, "max-batch", 500, 1, maxIngestBatch, "consumer MaxBatch, and the size of the baseline's ZADD pipelines")
	s.intVar(&c.lanes, "lanes", kafkajoin.DefaultConsumerConfig().Lanes, 1, maxIngestLanes, "consumer Lanes (WAITQ_WRITE_LANES): batches written at once")
	s.intVar(&c.rounds, "rounds", 1, 1, maxRounds, "times the consumer and the ZADD pipeline are measured, alternating (the rates move from run to run; the figures are the round of the median ratio)")
	s.durMax(&c.timeout, "timeout", 120*time.Second, maxIngestTimeout, "bound of each step: pre-fill, consume, baseline")
	s.boolVar(&c.cluster, "redis-cluster", false, "run against a Redis Cluster of three masters (redis-server children, redis-cli --cluster create) instead of one redis-server")
}

// consumeResult is what the consumer measurement saw.
type consumeResult struct {
	elapsed    time.Duration // consumer start → all N in the waiting line
	firstWrite time.Duration // consumer start → first member seen
	atFirst    int64         // members seen at firstWrite
	stats      kafkajoin.ConsumerStats
	redisCPU   time.Duration // the server's CPU over the run (INFO cpu; 0 on a cluster)
}

// RunIngest measures how fast the ingest consumer moves a pre-filled topic
// into Redis, next to raw pipelined ZADDs of the same members, then reads the
// same topic again with the fast track on (its joins admit while there is
// room: the cost of admission on the write path), in the same run.
func RunIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg ingestConfig
	if ok, err := begin("ingest", &cfg, args, stdout, stderr); !ok {
		return err
	}
	st, err := startStack(ctx, stackSpec{cluster: cfg.cluster}, stderr)
	if err != nil {
		return err
	}
	defer st.close()
	store, err := redisstore.New(st.client, redisstore.Options{})
	if err != nil {
		return err
	}
	conn := kafkajoin.BrokerConfig{Brokers: st.Brokers(), TopicPrefix: kafkajoin.DefaultTopicPrefix}
	fmt.Fprintf(stdout, "target   ingest consumer in-process, kfake in-process, %s; %d partitions\n",
		st.redisKind(ctx), benchPartitions)
	base := time.Now().UnixMilli()
	fill, err := prefill(ctx, store, conn, cfg.n, false, base, cfg.timeout, stderr)
	if err != nil {
		return err
	}
	rounds := make([]ingestRound, cfg.rounds)
	var rb rebuild.Result
	for i := range rounds {
		if rounds[i].cons, err = consume(ctx, conn, store, cfg, fmt.Sprintf("loadgen-ingest-%d", i+1), stderr); err != nil {
			return err
		}
		if i == 0 {
			if rb, err = rebuildLine(ctx, conn, store, cfg, stderr); err != nil {
				return err
			}
		}
		if rounds[i].zadd, err = zaddBaseline(ctx, st.client, cfg, base, stderr); err != nil {
			return err
		}
	}
	// The same topic again, with joins admitting while the event has room.
	fastStore, err := redisstore.New(st.client, redisstore.Options{FastTrack: queue.DefaultAdmitBatch})
	if err != nil {
		return err
	}
	fast, err := consume(ctx, conn, fastStore, cfg, "loadgen-fast-track", stderr)
	if err != nil {
		return err
	}
	printIngest(stdout, cfg, fill, rounds, fast, rb)
	return nil
}

// prefill registers the bench event, creates its topic and writes n join
// messages there in large batches (u0…, stamped from base, each with a
// 32-character join key when keyed), within timeout; it returns how long
// the writing took.
func prefill(ctx context.Context, store *redisstore.Store, conn kafkajoin.BrokerConfig, n int, keyed bool, base int64, timeout time.Duration, stderr io.Writer) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ev := queue.Event{ID: benchEvent, Capacity: 100, StaySeconds: 60, State: queue.StateOpen, Partitions: benchPartitions}
	if err := putEvents(ctx, store, conn, ev); err != nil {
		return 0, err
	}
	w := &kafka.Writer{
		Addr: kafka.TCP(conn.Brokers...), Topic: conn.Topic(benchEvent), Balancer: kafka.Murmur2Balancer{},
		BatchSize: 5000, BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafka.RequireAll, Transport: &kafka.Transport{ClientID: "loadgen"},
	}
	defer w.Close()
	start := time.Now()
	msgs := make([]kafka.Message, 0, prefillChunk)
	for i := range n {
		m := queue.Message{V: queue.MessageVersion, Op: queue.OpJoin, EventID: benchEvent, UserID: "u" + strconv.Itoa(i), TS: base + int64(i), ID: "prefill-" + strconv.Itoa(i)}
		if keyed {
			m.JoinKey = fmt.Sprintf("%032x", i)
		}
		v, err := m.Encode()
		if err != nil {
			return 0, fmt.Errorf("prefill: encode %s: %w", m.ID, err)
		}
		msgs = append(msgs, kafka.Message{Key: []byte(m.UserID), Value: v})
		if len(msgs) == prefillChunk || i == n-1 {
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				return 0, fmt.Errorf("prefill: write messages %d-%d: %w", i+1-len(msgs), i, err)
			}
			fmt.Fprintf(stderr, "  prefill %5.1fs  %d/%d\n", time.Since(start).Seconds(), i+1, n)
			msgs = msgs[:0]
		}
	}
	return time.Since(start), nil
}

// consume empties the bench event's line, starts a consumer of group (a
// group of its own, so it reads the topic from the start) writing into
// store and times it from its start until all cfg.n users are in the line
// or admitted (a store with the fast track admits while the event has room).
func consume(ctx context.Context, conn kafkajoin.BrokerConfig, store *redisstore.Store, cfg ingestConfig, group string, stderr io.Writer) (consumeResult, error) {
	if err := clearLine(ctx, store.Client()); err != nil {
		return consumeResult{}, err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ccfg := kafkajoin.ConsumerConfig{BrokerConfig: conn, GroupID: group, MaxBatch: cfg.maxBatch, Lanes: cfg.lanes, DiscoveryInterval: 200 * time.Millisecond, Logger: log}
	cons, err := kafkajoin.NewConsumer(ccfg, store)
	if err != nil {
		return consumeResult{}, err
	}
	cpu := startRedisCPU(ctx, store.Client())
	t := stack.Go(ctx, cons.Run)
	res, err := pollLine(ctx, store.Client(), cfg.n, cfg.timeout, t.Exited(), nil, stderr)
	res.redisCPU = cpu()
	switch stopErr := t.Stop(20 * time.Second); {
	case errors.Is(stopErr, stack.ErrNotStopped):
		fmt.Fprintf(stderr, "loadgen: the consumer %v\n", stopErr)
	case err != nil && stopErr != nil:
		err = fmt.Errorf("%w (consumer: %v)", err, stopErr)
	}
	if err != nil {
		err = fmt.Errorf("consume: %w", err)
	}
	res.stats = cons.Stats()
	return res, err
}

// startRedisCPU returns a function that returns the server's CPU since
// startRedisCPU was called: 0 on a cluster, or when INFO fails.
func startRedisCPU(ctx context.Context, rc redis.UniversalClient) func() time.Duration {
	cpu0, err0 := serverCPU(ctx, rc)
	return func() time.Duration {
		if cpu1, err1 := serverCPU(ctx, rc); err0 == nil && err1 == nil {
			return cpu1 - cpu0
		}
		return 0
	}
}

// rebuildLine empties Redis as a loss would, rebuilds the bench event from
// its topic (the n joins and the config record) and checks the line is
// whole again.
func rebuildLine(ctx context.Context, conn kafkajoin.BrokerConfig, store *redisstore.Store, cfg ingestConfig, stderr io.Writer) (rebuild.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	if err := store.Client().FlushAll(ctx).Err(); err != nil {
		return rebuild.Result{}, fmt.Errorf("rebuild: flush: %w", err)
	}
	pub, err := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: conn})
	if err != nil {
		return rebuild.Result{}, err
	}
	defer pub.Close()
	res, err := (&rebuild.Rebuilder{Log: pub.Admin(), Store: store}).Rebuild(ctx, benchEvent)
	if err != nil {
		return res, err
	}
	n, err := store.Client().ZCard(ctx, redisstore.WaitingKey(benchEvent)).Result()
	if err != nil || n != int64(cfg.n) {
		return res, fmt.Errorf("rebuild: %d in line after the rebuild (%v), want %d", n, err, cfg.n)
	}
	fmt.Fprintf(stderr, "  rebuild %5.1fs  %d messages, %d in line\n", res.Paused.Seconds(), res.Messages, n)
	return res, nil
}

// clearLine removes the bench event's line, holders, counters, join keys and applied
// offsets (not its configuration), for a second run over the same topic.
func clearLine(ctx context.Context, rc redis.UniversalClient) error {
	ev := benchEvent
	err := rc.Del(ctx, redisstore.WaitingKey(ev), redisstore.HoldersKey(ev), redisstore.StatsKey(ev),
		redisstore.SeenKey(ev), redisstore.ServedKey(ev), redisstore.OffsetsKey(ev), redisstore.JoinKeysKey(ev)).Err()
	if err != nil {
		return fmt.Errorf("clear the line of %s: %w", ev, err)
	}
	return nil
}

// pollLine polls the bench event every pollInterval until want users are in
// its waiting line or were admitted, the consumer exits, ctx ends or limit
// passes, timing it from its call. It calls first (unless nil) when it
// first sees one.
func pollLine(ctx context.Context, rc redis.UniversalClient, want int, limit time.Duration, exited <-chan struct{}, first func(), stderr io.Writer) (consumeResult, error) {
	var res consumeResult
	var n atomic.Int64
	start := time.Now()
	stop := startProgressLine(stderr, func() string {
		return fmt.Sprintf("  consume %5.1fs  in line or admitted %d/%d", time.Since(start).Seconds(), n.Load(), want)
	})
	defer stop()
	err := poll(ctx, limit, pollInterval, func() (bool, error) {
		select {
		case <-exited:
			return true, errors.New("the consumer stopped before the line was full")
		default:
		}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		p := rc.Pipeline()
		waiting := p.ZCard(qctx, redisstore.WaitingKey(benchEvent))
		admitted := p.HGet(qctx, redisstore.StatsKey(benchEvent), "admittedTotal")
		_, err := p.Exec(qctx)
		if errors.Is(err, redis.Nil) || err == nil { // redis.Nil: nobody admitted yet
			a, _ := strconv.ParseInt(admitted.Val(), 10, 64)
			n.Store(waiting.Val() + a)
			err = nil
		}
		if n.Load() > 0 && res.firstWrite == 0 {
			res.firstWrite, res.atFirst = time.Since(start), n.Load()
			if first != nil {
				first()
			}
		}
		if n.Load() >= int64(want) {
			res.elapsed = time.Since(start)
			return true, nil
		}
		return false, err
	}, func(last error) error {
		return fmt.Errorf("%d of %d in line or admitted after %s (last read error: %v)", n.Load(), want, limit, last)
	})
	return res, err
}

// baselineResult is what the ZADD pipeline measurement saw.
type baselineResult struct {
	elapsed  time.Duration
	redisCPU time.Duration // the server's CPU over it (INFO cpu; 0 on a cluster)
}

// zaddBaseline ZADDs the same members into a fresh key, cfg.maxBatch commands
// per pipeline, one pipeline at a time, and returns how long it took and
// the server's CPU meanwhile.
func zaddBaseline(ctx context.Context, rc redis.UniversalClient, cfg ingestConfig, base int64, stderr io.Writer) (baselineResult, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	key := "loadgen:{" + benchEvent + "}:baseline"
	if err := rc.Del(ctx, key).Err(); err != nil {
		return baselineResult{}, fmt.Errorf("baseline: clear %s: %w", key, err)
	}
	cpu := startRedisCPU(ctx, rc)
	start := time.Now()
	for i := 0; i < cfg.n; i += cfg.maxBatch {
		p := rc.Pipeline()
		for j := i; j < min(i+cfg.maxBatch, cfg.n); j++ {
			p.ZAdd(ctx, key, redis.Z{Score: float64(base + int64(j)), Member: "u" + strconv.Itoa(j)})
		}
		if _, err := p.Exec(ctx); err != nil {
			return baselineResult{}, fmt.Errorf("baseline: pipeline at %d: %w", i, err)
		}
	}
	res := baselineResult{elapsed: time.Since(start), redisCPU: cpu()}
	if n, err := rc.ZCard(ctx, key).Result(); err != nil || n != int64(cfg.n) {
		return baselineResult{}, fmt.Errorf("baseline: %s holds %d members (%v), want %d", key, n, err, cfg.n)
	}
	fmt.Fprintf(stderr, "  baseline %5.1fs  %d ZADDs\n", res.elapsed.Seconds(), cfg.n)
	return res, nil
}

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
	report.Summary(w, "ingest consumer into Redis", fmt.Sprintf("%.0f msg/s", consRate),
		fmt.Sprintf("go-redis ZADD pipeline %.0f msg/s", zaddRate), consRate, zaddRate, "")
	report.Summary(w, "rebuild of the event from its log after FLUSHALL", fmt.Sprintf("%.0f msg/s, paused %.1fs", rbRate, rb.Paused.Seconds()),
		fmt.Sprintf("ingest consumer %.0f msg/s", consRate), rbRate, consRate, "within 2× of the consumer")
	report.Summary(w, "ingest consumer with the fast track on", fmt.Sprintf("%.0f msg/s", fastRate),
		fmt.Sprintf("fast track off %.0f msg/s", consRate), fastRate, consRate, "cost of admission on the write path")
}

package kafkajoin

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/queue"
)

// ConsumerStats counts what a Consumer did since it started.
type ConsumerStats struct {
	Fetched, Written, Ignored, DeadLettered, Retries, Commits, CommitErrors int64
	// Admitted counts the users the sink's fast track let in.
	Admitted int64
	// Inversions counts joins written behind someone placed after them who
	// was already admitted (queue.Fairness).
	Inversions int64
	// HoldsExpired counts the item holds that ended unconfirmed with the
	// slots of holders the fast track's admission step expired.
	HoldsExpired int64
	// Lag is the consumer-group lag of the partitions this member has
	// fetched from: log end (high-water mark) minus committed offset.
	Lag int64
}

// Consumer is one member of the ingest consumer group.
type Consumer struct {
	cfg   ConsumerConfig
	sink  queue.IngestStore
	admin *Admin
	dlq   *kafka.Writer
	log   *slog.Logger

	storeOK  atomic.Bool
	brokerOK atomic.Bool

	fetched, written, ignored, admitted, inversions, holdsExpired, deadLettered, retries, commits, commitErrors atomic.Int64

	mu     sync.Mutex
	topics []string                         // subscribed now
	parts  map[topicPartition]*partProgress // of the current generation
}

// partProgress is what a member knows of one partition's log end and of its
// own committed position.
type partProgress struct {
	end, committed int64
}

type topicPartition struct {
	topic     string
	partition int
}

// NewConsumer returns a Consumer writing into sink, or an error when cfg
// (its zero settings taking DefaultConsumerConfig's) is not valid; Run
// starts it.
func NewConsumer(cfg ConsumerConfig, sink queue.IngestStore) (*Consumer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tr := cfg.transport()
	c := &Consumer{
		cfg:   cfg,
		sink:  sink,
		admin: &Admin{conn: cfg.BrokerConfig, client: &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: tr}},
		dlq: &kafka.Writer{
			Addr:         kafka.TCP(cfg.Brokers...),
			Transport:    tr,
			Topic:        cfg.DLQTopic,
			Balancer:     kafka.Murmur2Balancer{},
			RequiredAcks: kafka.RequireAll,
			BatchTimeout: time.Millisecond,
		},
		log:   cfg.Logger,
		parts: map[topicPartition]*partProgress{},
	}
	c.storeOK.Store(true)
	return c, nil
}

// Ready reports whether the broker answered the last discovery and the sink
// accepted the last write.
func (c *Consumer) Ready() bool { return c.Check() == nil }

// Check is Ready as a domain error for readiness endpoints:
// queue.ErrStoreUnavailable while writes to the live state fail (they are
// being retried), queue.ErrBrokerUnavailable while the broker does not
// answer.
func (c *Consumer) Check() error {
	switch {
	case !c.storeOK.Load():
		return queue.ErrStoreUnavailable
	case !c.brokerOK.Load():
		return queue.ErrBrokerUnavailable
	}
	return nil
}

// Stats returns the counters.
func (c *Consumer) Stats() ConsumerStats {
	c.mu.Lock()
	var lag int64
	for _, p := range c.parts {
		lag += max(p.end-p.committed, 0)
	}
	c.mu.Unlock()
	return ConsumerStats{
		Fetched: c.fetched.Load(), Written: c.written.Load(), Ignored: c.ignored.Load(), Admitted: c.admitted.Load(), Inversions: c.inversions.Load(), HoldsExpired: c.holdsExpired.Load(),
		DeadLettered: c.deadLettered.Load(), Retries: c.retries.Load(),
		Commits: c.commits.Load(), CommitErrors: c.commitErrors.Load(), Lag: lag,
	}
}

// Run consumes until ctx ends, then commits what was written and leaves the
// group. It returns nil on a clean stop.
func (c *Consumer) Run(ctx context.Context) error {
	defer c.dlq.Close()
	if !c.retry(ctx, "create dead-letter topic", &c.brokerOK, func(ctx context.Context) error {
		return c.admin.ensure(ctx, c.cfg.DLQTopic, 1)
	}) {
		return nil
	}
	var topics []string
	for ctx.Err() == nil {
		if len(topics) == 0 {
			topics, _ = c.discover(ctx)
			if len(topics) == 0 {
				c.setTopics(nil)
				clock.Sleep(ctx, c.cfg.DiscoveryInterval)
				continue
			}
		}
		topics = c.runGeneration(ctx, topics)
	}
	return nil
}

// runGeneration consumes the given topics with one group reader until ctx
// ends or the set of join topics changes; it returns the new set (nil when
// Run is ending).
func (c *Consumer) runGeneration(ctx context.Context, topics []string) []string {
	c.setTopics(topics)
	c.log.Info("subscribing", "group", c.cfg.GroupID, "topics", topics)
	r := c.newReader(topics)
	gctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
		if err := r.Close(); err != nil {
			c.log.Warn("closing group reader", "err", err)
		}
	}()
	next := topics
	wg.Go(func() {
		if found, changed := c.watchTopics(gctx, topics); changed {
			next = found
			stop()
		}
	})
	// Each lane gathers and writes the batches of its own partitions: a
	// partition's batches are written one after another, while another
	// lane's are written meanwhile.
	lanes := make([]chan fetchedMessage, c.cfg.Lanes)
	for i := range lanes {
		lanes[i] = make(chan fetchedMessage, laneBatches*c.cfg.MaxBatch)
	}
	wg.Go(func() { c.fetch(gctx, r, lanes) })
	// Batches are committed by a committer of their own while the next are
	// written, each lane's in order: at most one handled batch a lane, and
	// one more, wait for their commit.
	commits := make(chan []kafka.Message, 1)
	var committer sync.WaitGroup
	committer.Go(func() {
		for batch := range commits {
			c.commit(ctx, r, batch)
		}
	})
	var (
		writers sync.WaitGroup
		stopped atomic.Bool
	)
	for _, lane := range lanes {
		writers.Go(func() {
			if !c.consume(ctx, gctx, lane, commits) {
				stopped.Store(true)
			}
		})
	}
	writers.Wait()
	ok := !stopped.Load()
	close(commits)
	committer.Wait() // every batch handled is committed (or failed) before the reader closes
	if !ok {
		return nil // Run is ending
	}
	wg.Wait()
	return next
}

// laneBatches is how many batches of fetched messages a lane holds while it
// writes one. The one fetch goroutine hands messages to the lanes in the
// order the reader gives them, often a partition's run at a time: while a
// lane's buffer is full, every lane waits for it. Room for one batch left
// the other lanes idle while a lane wrote: BenchmarkConsumerPace, a store
// that sleeps 2 µs a message, 373,000–386,000 msg/s with one, 452,000–
// 457,000 with four.
const laneBatches = 4

// newReader returns a group reader of topics that commits synchronously,
// only when told to.
func (c *Consumer) newReader(topics []string) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers:                c.cfg.Brokers,
		GroupID:                c.cfg.GroupID,
		GroupTopics:            topics,
		Dialer:                 c.cfg.dialer(),
		MinBytes:               1,
		MaxBytes:               10 << 20,
		MaxWait:                500 * time.Millisecond,
		QueueCapacity:          c.cfg.MaxBatch,
		CommitInterval:         0, // synchronous: CommitMessages returns after the broker stored it
		SessionTimeout:         c.cfg.SessionTimeout,
		HeartbeatInterval:      min(3*time.Second, c.cfg.SessionTimeout/3),
		RebalanceTimeout:       c.cfg.SessionTimeout,
		JoinGroupBackoff:       200 * time.Millisecond,
		WatchPartitionChanges:  true,
		PartitionWatchInterval: c.cfg.DiscoveryInterval,
		StartOffset:            kafka.FirstOffset,
		ReadBackoffMin:         10 * time.Millisecond,
		ReadBackoffMax:         500 * time.Millisecond,
		ReadLagInterval:        -1,
		Logger:                 kafka.LoggerFunc(func(f string, a ...any) { c.log.Debug(fmt.Sprintf(f, a...)) }),
		ErrorLogger:            kafka.LoggerFunc(func(f string, a ...any) { c.log.Warn(fmt.Sprintf(f, a...)) }),
	})
}

// fetchedMessage is a message read from the log, decoded (err: it cannot be).
type fetchedMessage struct {
	src kafka.Message
	msg queue.Message
	err error
}

// fetch hands r's messages, decoded, to the lane of their partition until
// ctx ends: the next batch is decoded while the last is written. The
// partitions are dealt to the lanes in the order they are first fetched,
// so that the lanes share whatever partitions the group gave this member.
func (c *Consumer) fetch(ctx context.Context, r *kafka.Reader, lanes []chan fetchedMessage) {
	laneOf := map[topicPartition]chan fetchedMessage{}
	for {
		km, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("fetch failed", "err", err)
			clock.Sleep(ctx, c.cfg.RetryMin)
			continue
		}
		c.noteFetched(km)
		f := fetchedMessage{src: km}
		f.msg, f.err = queue.DecodeMessage(km.Value)
		tp := topicPartition{km.Topic, km.Partition}
		lane := laneOf[tp]
		if lane == nil {
			lane = lanes[len(laneOf)%len(lanes)]
			laneOf[tp] = lane
		}
		select {
		case lane <- f:
		case <-ctx.Done():
			return
		}
	}
}

// consume gathers what msgs holds into batches of at most MaxBatch and
// handles each, handing it to commits once written, until gctx (the
// generation) ends; it returns false when runCtx (Run's) ended in the
// middle of a batch. A batch is finished even when the topic set changes
// meanwhile; only the end of Run interrupts it (uncommitted, so
// redelivered).
func (c *Consumer) consume(runCtx, gctx context.Context, msgs <-chan fetchedMessage, commits chan<- []kafka.Message) bool {
	batch := make([]fetchedMessage, 0, c.cfg.MaxBatch)
	for {
		select {
		case <-gctx.Done():
			return true
		case m := <-msgs:
			batch = append(batch[:0], m)
		}
	drain:
		for len(batch) < c.cfg.MaxBatch {
			select {
			case m := <-msgs:
				batch = append(batch, m)
			default:
				break drain
			}
		}
		if !c.handle(runCtx, batch) {
			return false
		}
		srcs := make([]kafka.Message, len(batch))
		for i := range batch {
			srcs[i] = batch[i].src
		}
		commits <- srcs
	}
}

// noteFetched records the log end of m's partition; a partition first seen
// starts from m's offset, where the group's committed position was.
func (c *Consumer) noteFetched(m kafka.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := topicPartition{m.Topic, m.Partition}
	p, ok := c.parts[k]
	if !ok {
		p = &partProgress{committed: m.Offset}
		c.parts[k] = p
	}
	p.end = max(p.end, m.HighWaterMark)
}

// noteCommitted advances the committed positions past batch.
func (c *Consumer) noteCommitted(batch []kafka.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range batch {
		if p := c.parts[topicPartition{m.Topic, m.Partition}]; p != nil {
			p.committed = max(p.committed, m.Offset+1)
		}
	}
}

package kafkajoin

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/pkg/queue"
)

// Sink applies decoded messages to the live state. An error means nothing may
// be assumed written; the batch is then offered again, so applying a batch
// twice must be harmless.
type Sink interface {
	Ingest(ctx context.Context, msgs []queue.Message, nowMs int64) (queue.IngestResult, error)
}

// ConsumerConfig tunes a Consumer. Zero values take the defaults noted.
type ConsumerConfig struct {
	Conn
	GroupID  string // DefaultGroupID
	DLQTopic string // DefaultDLQTopic
	// DiscoveryInterval is how often the broker is asked for new event
	// topics (2 s).
	DiscoveryInterval time.Duration
	// SessionTimeout is how long the group waits for a silent member before
	// moving its partitions to others (10 s).
	SessionTimeout time.Duration
	// MaxBatch caps the messages written to the sink in one call (500).
	MaxBatch int
	// RetryMin and RetryMax bound the backoff between attempts of a failed
	// write (50 ms, 5 s). Attempts go on until they succeed or Run ends.
	RetryMin, RetryMax time.Duration
	// AttemptTimeout bounds one attempt of a write (5 s): a server that
	// hangs counts as failed, so it is retried and reported unready.
	AttemptTimeout time.Duration
	Logger         *slog.Logger
}

func (c *ConsumerConfig) defaults() {
	if c.GroupID == "" {
		c.GroupID = DefaultGroupID
	}
	if c.DLQTopic == "" {
		c.DLQTopic = DefaultDLQTopic
	}
	if c.DiscoveryInterval <= 0 {
		c.DiscoveryInterval = 2 * time.Second
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 500
	}
	if c.RetryMin <= 0 {
		c.RetryMin = 50 * time.Millisecond
	}
	if c.RetryMax < c.RetryMin {
		c.RetryMax = max(5*time.Second, c.RetryMin)
	}
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// ConsumerStats counts what a Consumer did since it started.
type ConsumerStats struct {
	Fetched, Written, Ignored, DeadLettered, Retries, Commits, CommitErrors int64
	// Lag is the consumer-group lag of the partitions this member has
	// fetched from: log end (high-water mark) minus committed offset.
	Lag int64
}

// Consumer is one member of the ingest consumer group.
type Consumer struct {
	cfg   ConsumerConfig
	sink  Sink
	admin *Admin
	dlq   *kafka.Writer
	log   *slog.Logger

	storeOK  atomic.Bool
	brokerOK atomic.Bool

	fetched, written, ignored, deadLettered, retries, commits, commitErrors atomic.Int64

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

// NewConsumer returns a Consumer writing into sink; Run starts it.
func NewConsumer(cfg ConsumerConfig, sink Sink) *Consumer {
	cfg.defaults()
	tr := cfg.transport()
	c := &Consumer{
		cfg:   cfg,
		sink:  sink,
		admin: &Admin{conn: cfg.Conn, client: &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: tr}},
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
	return c
}

// Ready reports whether the broker answered the last discovery and the sink
// accepted the last write.
func (c *Consumer) Ready() bool { return c.storeOK.Load() && c.brokerOK.Load() }

// Topics returns the topics subscribed now.
func (c *Consumer) Topics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.topics)
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
		Fetched: c.fetched.Load(), Written: c.written.Load(), Ignored: c.ignored.Load(),
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
				sleep(ctx, c.cfg.DiscoveryInterval)
				continue
			}
		}
		topics = c.runGeneration(ctx, topics)
	}
	return nil
}

// discover returns the join topics; ok is false when the broker did not
// answer.
func (c *Consumer) discover(ctx context.Context) (topics []string, ok bool) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	topics, err := c.admin.JoinTopics(dctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("topic discovery failed", "err", err)
		}
		c.brokerOK.Store(false)
		return nil, false
	}
	c.brokerOK.Store(true)
	return topics, true
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

func (c *Consumer) setTopics(topics []string) {
	c.mu.Lock()
	c.topics = topics
	clear(c.parts) // partitions may move to other members
	c.mu.Unlock()
}

// runGeneration consumes the given topics with one group reader until ctx
// ends or the set of join topics changes; it returns the new set.
func (c *Consumer) runGeneration(ctx context.Context, topics []string) []string {
	c.setTopics(topics)
	c.log.Info("subscribing", "group", c.cfg.GroupID, "topics", topics)

	hb := min(3*time.Second, c.cfg.SessionTimeout/3)
	r := kafka.NewReader(kafka.ReaderConfig{
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
		HeartbeatInterval:      hb,
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
	gctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
		if err := r.Close(); err != nil {
			c.log.Warn("closing group reader", "err", err)
		}
	}()

	// A new or deleted event topic ends the generation: kafka-go's group
	// reader takes a fixed topic list, and a listed topic that does not
	// exist would stall the whole group. An empty set sends Run back to
	// waiting for topics.
	next := topics
	wg.Go(func() {
		t := time.NewTicker(c.cfg.DiscoveryInterval)
		defer t.Stop()
		for {
			select {
			case <-gctx.Done():
				return
			case <-t.C:
			}
			if found, ok := c.discover(gctx); ok && !slices.Equal(found, topics) {
				next = found
				c.log.Info("join topics changed", "topics", found)
				stop()
				return
			}
		}
	})

	msgs := make(chan kafka.Message, c.cfg.MaxBatch)
	wg.Go(func() {
		for {
			m, err := r.FetchMessage(gctx)
			if err != nil {
				if gctx.Err() != nil {
					return
				}
				c.log.Warn("fetch failed", "err", err)
				sleep(gctx, c.cfg.RetryMin)
				continue
			}
			c.noteFetched(m)
			select {
			case msgs <- m:
			case <-gctx.Done():
				return
			}
		}
	})

	batch := make([]kafka.Message, 0, c.cfg.MaxBatch)
	for {
		select {
		case <-gctx.Done():
			wg.Wait()
			return next
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
		// The batch is finished even when the topic set changes meanwhile;
		// only the end of Run interrupts it (uncommitted, so redelivered).
		if !c.handle(ctx, r, batch) {
			return nil // Run is ending
		}
	}
}

type deadLetter struct {
	msg    kafka.Message
	reason string
}

// handle writes one batch: valid messages to the sink, the rest to the
// dead-letter topic, then commits the batch. It returns false when ctx ended
// before the batch was written (then nothing of it is committed).
func (c *Consumer) handle(ctx context.Context, r *kafka.Reader, batch []kafka.Message) bool {
	c.fetched.Add(int64(len(batch)))
	good := make([]queue.Message, 0, len(batch))
	goodSrc := make([]int, 0, len(batch))
	var dead []deadLetter
	for i, km := range batch {
		m, err := queue.DecodeMessage(km.Value)
		switch {
		case err != nil:
			dead = append(dead, deadLetter{km, "invalid_message: " + err.Error()})
		case c.cfg.Topic(m.EventID) != km.Topic:
			dead = append(dead, deadLetter{km, fmt.Sprintf("event_mismatch: message for event %q on topic %q", m.EventID, km.Topic)})
		default:
			good = append(good, m)
			goodSrc = append(goodSrc, i)
		}
	}

	if len(good) > 0 {
		var res queue.IngestResult
		if !c.retry(ctx, "write to store", &c.storeOK, func(ctx context.Context) (err error) {
			res, err = c.sink.Ingest(ctx, good, time.Now().UnixMilli())
			return err
		}) {
			return false
		}
		for i, m := range good {
			if slices.Contains(res.UnknownEvents, m.EventID) {
				dead = append(dead, deadLetter{batch[goodSrc[i]], "event_not_found: event " + m.EventID + " has no configuration"})
			}
		}
		c.written.Add(int64(res.Joined + res.Left))
		c.ignored.Add(int64(res.Ignored))
	}

	if len(dead) > 0 {
		if !c.retry(ctx, "write to dead-letter topic", &c.brokerOK, func(ctx context.Context) error {
			return c.deadLetter(ctx, dead)
		}) {
			return false
		}
		c.deadLettered.Add(int64(len(dead)))
	}

	// Everything in the batch is applied or dead-lettered: commit it, even
	// when Run is ending. A failed commit only means redelivery, which the
	// sink tolerates.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.CommitMessages(cctx, batch...); err != nil {
		c.commitErrors.Add(1)
		c.log.Warn("commit failed; the batch will be redelivered", "messages", len(batch), "err", err)
	} else {
		c.commits.Add(1)
		c.noteCommitted(batch)
	}
	return true
}

func (c *Consumer) deadLetter(ctx context.Context, dead []deadLetter) error {
	out := make([]kafka.Message, len(dead))
	for i, d := range dead {
		c.log.Warn("dead-lettering message", "topic", d.msg.Topic, "partition", d.msg.Partition, "offset", d.msg.Offset, "reason", d.reason)
		out[i] = kafka.Message{
			Key:   d.msg.Key,
			Value: d.msg.Value,
			Headers: []kafka.Header{
				{Key: "waitq-reason", Value: []byte(d.reason)},
				{Key: "waitq-source-topic", Value: []byte(d.msg.Topic)},
				{Key: "waitq-source-partition", Value: []byte(strconv.Itoa(d.msg.Partition))},
				{Key: "waitq-source-offset", Value: []byte(strconv.FormatInt(d.msg.Offset, 10))},
			},
		}
	}
	return c.dlq.WriteMessages(ctx, out...)
}

// retry calls f until it succeeds or ctx ends, with exponential backoff and
// jitter, keeping health false while it fails. It never gives up on its own:
// a message that was fetched is written or stays uncommitted.
func (c *Consumer) retry(ctx context.Context, what string, health *atomic.Bool, f func(context.Context) error) bool {
	delay := c.cfg.RetryMin
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
		err := f(actx)
		cancel()
		if err == nil {
			health.Store(true)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		health.Store(false)
		c.retries.Add(1)
		c.log.Warn("retrying", "what", what, "attempt", attempt, "backoff", delay, "err", err)
		// Full jitter over the upper half keeps many consumers from
		// hammering a recovering server in step.
		if !sleep(ctx, delay/2+rand.N(delay/2+1)) {
			return false
		}
		delay = min(delay*2, c.cfg.RetryMax)
	}
}

// sleep waits d or until ctx ends; it reports whether the full time passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

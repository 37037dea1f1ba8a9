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

	"github.com/waitq/waitq/internal/queue"
)

// Sink applies decoded messages to the live state. An error means nothing may
// be assumed written; the batch is then offered again, so applying a batch
// twice must be harmless.
type Sink interface {
	Ingest(ctx context.Context, msgs []queue.Message, nowMs int64) (queue.IngestResult, error)
}

// ConsumerStats counts what a Consumer did since it started.
type ConsumerStats struct {
	Fetched, Written, Ignored, DeadLettered, Retries, Commits, CommitErrors int64
	// Admitted counts the users the sink's fast track let in.
	Admitted int64
	// Inversions counts joins written behind someone placed after them who
	// was already admitted (queue.Fairness).
	Inversions int64
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

	fetched, written, ignored, admitted, inversions, deadLettered, retries, commits, commitErrors atomic.Int64

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
func NewConsumer(cfg ConsumerConfig, sink Sink) (*Consumer, error) {
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
		Fetched: c.fetched.Load(), Written: c.written.Load(), Ignored: c.ignored.Load(), Admitted: c.admitted.Load(), Inversions: c.inversions.Load(),
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
	msgs := make(chan kafka.Message, c.cfg.MaxBatch)
	wg.Go(func() { c.fetch(gctx, r, msgs) })
	if !c.consume(ctx, gctx, r, msgs) {
		return nil // Run is ending
	}
	wg.Wait()
	return next
}

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

// watchTopics asks the broker for the join topics every DiscoveryInterval
// until they differ from topics (it returns them, changed) or ctx ends. A
// new or deleted event topic ends the generation: kafka-go's group reader
// takes a fixed topic list, and a listed topic that does not exist would
// stall the whole group. An empty set sends Run back to waiting for topics.
func (c *Consumer) watchTopics(ctx context.Context, topics []string) (found []string, changed bool) {
	t := time.NewTicker(c.cfg.DiscoveryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, false
		case <-t.C:
		}
		if found, ok := c.discover(ctx); ok && !slices.Equal(found, topics) {
			c.log.Info("join topics changed", "topics", found)
			return found, true
		}
	}
}

// fetch hands r's messages to msgs until ctx ends.
func (c *Consumer) fetch(ctx context.Context, r *kafka.Reader, msgs chan<- kafka.Message) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("fetch failed", "err", err)
			sleep(ctx, c.cfg.RetryMin)
			continue
		}
		c.noteFetched(m)
		select {
		case msgs <- m:
		case <-ctx.Done():
			return
		}
	}
}

// consume gathers what msgs holds into batches of at most MaxBatch and
// handles each, until gctx (the generation) ends; it returns false when
// runCtx (Run's) ended in the middle of a batch. A batch is finished even
// when the topic set changes meanwhile; only the end of Run interrupts it
// (uncommitted, so redelivered).
func (c *Consumer) consume(runCtx, gctx context.Context, r *kafka.Reader, msgs <-chan kafka.Message) bool {
	batch := make([]kafka.Message, 0, c.cfg.MaxBatch)
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
		if !c.handle(runCtx, r, batch) {
			return false
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
	good, dead := c.decode(batch)
	more, ok := c.write(ctx, good)
	if !ok {
		return false
	}
	if !c.deadLetterAll(ctx, append(dead, more...)) {
		return false
	}
	c.commit(ctx, r, batch)
	return true
}

// decoded is a message of a batch that can be applied, with its source.
type decoded struct {
	msg queue.Message
	src kafka.Message
}

// decode sorts a batch into messages the sink can apply and those that can
// never be applied (malformed, or on another event's topic).
func (c *Consumer) decode(batch []kafka.Message) (good []decoded, dead []deadLetter) {
	good = make([]decoded, 0, len(batch))
	for _, km := range batch {
		m, err := queue.DecodeMessage(km.Value)
		switch {
		case err != nil:
			dead = append(dead, deadLetter{km, "invalid_message: " + err.Error()})
		case c.cfg.Topic(m.EventID) != km.Topic:
			dead = append(dead, deadLetter{km, fmt.Sprintf("event_mismatch: message for event %q on topic %q", m.EventID, km.Topic)})
		default:
			good = append(good, decoded{m, km})
		}
	}
	return good, dead
}

// write applies good to the sink, retrying until it succeeds; the messages
// of events with no configuration come back to be dead-lettered. The
// messages of an event being rebuilt from its log are held, and offered
// again every second until the rebuild ends: the batch stays uncommitted
// meanwhile. ok is false when ctx ended first.
func (c *Consumer) write(ctx context.Context, good []decoded) (dead []deadLetter, ok bool) {
	for len(good) > 0 {
		msgs := make([]queue.Message, len(good))
		for i, g := range good {
			msgs[i] = g.msg
		}
		var res queue.IngestResult
		if !c.retry(ctx, "write to store", &c.storeOK, func(ctx context.Context) (err error) {
			res, err = c.sink.Ingest(ctx, msgs, time.Now().UnixMilli())
			return err
		}) {
			return nil, false
		}
		var held []decoded
		for _, g := range good {
			switch {
			case slices.Contains(res.UnknownEvents, g.msg.EventID):
				dead = append(dead, deadLetter{g.src, "event_not_found: event " + g.msg.EventID + " has no configuration"})
			case slices.Contains(res.Rebuilding, g.msg.EventID):
				held = append(held, g)
			}
		}
		c.written.Add(int64(res.Joined + res.Left))
		c.ignored.Add(int64(res.Ignored))
		c.admitted.Add(int64(res.Admitted))
		c.inversions.Add(int64(res.Inversions))
		if len(held) > 0 {
			c.log.Info("events being rebuilt from their log; holding their messages", "events", res.Rebuilding, "messages", len(held))
			if !sleep(ctx, min(c.cfg.RetryMax, time.Second)) {
				return nil, false
			}
		}
		good = held
	}
	return dead, true
}

// deadLetterAll writes dead to the dead-letter topic, retrying until it
// succeeds; false when ctx ended first.
func (c *Consumer) deadLetterAll(ctx context.Context, dead []deadLetter) bool {
	if len(dead) == 0 {
		return true
	}
	if !c.retry(ctx, "write to dead-letter topic", &c.brokerOK, func(ctx context.Context) error {
		return c.deadLetter(ctx, dead)
	}) {
		return false
	}
	c.deadLettered.Add(int64(len(dead)))
	return true
}

// commit commits a batch whose every message is applied or dead-lettered,
// even when Run is ending. A failed commit only means redelivery, which the
// sink tolerates.
func (c *Consumer) commit(ctx context.Context, r *kafka.Reader, batch []kafka.Message) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.CommitMessages(cctx, batch...); err != nil {
		c.commitErrors.Add(1)
		c.log.Warn("commit failed; the batch will be redelivered", "messages", len(batch), "err", err)
		return
	}
	c.commits.Add(1)
	c.noteCommitted(batch)
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

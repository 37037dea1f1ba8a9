package kafkajoin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/queue"
)

// Publisher writes joins and leaves to the event topics and returns only after
// the broker acknowledged them (acks=all).
type Publisher struct {
	conn   BrokerConfig
	w      *batcher
	client *kafka.Client
}

var (
	_ queue.Publisher = (*Publisher)(nil)
	_ queue.Recorder  = (*Publisher)(nil)
)

// NewPublisher returns a Publisher, or an error when cfg (its zero settings
// taking DefaultPublisherConfig's) is not valid; it connects lazily.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tr := cfg.transport()
	addr := kafka.TCP(cfg.Brokers...)
	// Partitions are chosen as kafka.Murmur2Balancer chooses them, the Java
	// client's default partitioner, so a tool producing with key = userId
	// lands on the same partition as we do: a leave can never overtake its
	// join.
	w := newBatcher(addr, tr, cfg.BatchTimeout, cfg.BatchSize, cfg.Timeout)
	return &Publisher{conn: cfg.BrokerConfig, w: w, client: &kafka.Client{Addr: addr, Transport: tr}}, nil
}

// Publish writes m to its event's topic with key = user id. A topic not yet in
// this process's metadata cache (an event created through another replica)
// is retried until ctx ends.
func (p *Publisher) Publish(ctx context.Context, m queue.Message) error {
	return p.Record(ctx, []queue.Message{m})
}

// Record writes msgs, each to its event's topic with key = user id (a
// record of no user's, config or a chain draw's, has the event id, so an
// event's configurations and draw steps stay in order), in one write acknowledged by all in-sync replicas. It implements
// queue.Recorder.
func (p *Publisher) Record(ctx context.Context, msgs []queue.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	var one [1]message
	out := one[:0]
	if len(msgs) > 1 {
		out = make([]message, 0, len(msgs))
	}
	for i := range msgs {
		m := &msgs[i]
		key := m.UserID
		if key == "" {
			key = m.EventID
		}
		k, value, err := appendRecord(make([]byte, 0, len(key)+192), key, m)
		if err != nil {
			return fmt.Errorf("kafkajoin: encode %s of %s: %w", m.Op, m.EventID, err)
		}
		out = append(out, message{topic: p.conn.Topic(m.EventID), key: k, value: value})
	}
	for {
		err := p.w.write(ctx, out)
		if err == nil {
			return nil
		}
		if !unknownTopic(err) || ctx.Err() != nil {
			return fmt.Errorf("kafkajoin: publish %d messages to %s: %w", len(out), out[0].topic, err)
		}
		if !clock.Sleep(ctx, 100*time.Millisecond) {
			return fmt.Errorf("kafkajoin: publish %d messages to %s: %w", len(out), out[0].topic, err)
		}
	}
}

// Ping asks a broker for its API versions.
func (p *Publisher) Ping(ctx context.Context) error {
	if _, err := p.client.ApiVersions(ctx, &kafka.ApiVersionsRequest{}); err != nil {
		return fmt.Errorf("kafkajoin: ping: %w", err)
	}
	return nil
}

// Admin returns topic administration sharing this publisher's connections, so
// a topic it creates is at once in the publisher's metadata.
func (p *Publisher) Admin() *Admin { return &Admin{conn: p.conn, client: p.client} }

// Close flushes and closes the writer.
func (p *Publisher) Close() error {
	p.w.close()
	return nil
}

// unknownTopic reports whether err, a batch's included, is a topic (or
// partition) missing from the metadata.
func unknownTopic(err error) bool { return errors.Is(err, kafka.UnknownTopicOrPartition) }

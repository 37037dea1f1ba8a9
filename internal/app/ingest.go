package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/kafkajoin"
)

// Ingest is ingest-consumer: one member of the consumer group that writes
// joins and leaves into Redis.
type Ingest struct {
	Common
	Kafka
	Redis
	FastTrack
	GroupID           string
	DLQTopic          string
	DiscoveryInterval time.Duration
	SessionTimeout    time.Duration
	MaxBatch          int
}

var _ Service = (*Ingest)(nil)

// Name implements Service.
func (*Ingest) Name() string { return "ingest-consumer" }

// Bind implements Service.
func (c *Ingest) Bind(l *config.Loader) {
	def := kafkajoin.DefaultConsumerConfig()
	c.Common.bind(l, ":8082")
	c.Kafka.bind(l)
	c.Redis.bind(l)
	c.FastTrack.bind(l, "joins")
	l.String(&c.GroupID, "group-id", "WAITQ_GROUP_ID", def.GroupID, "Kafka consumer group")
	l.String(&c.DLQTopic, "dlq-topic", "WAITQ_DLQ_TOPIC", def.DLQTopic, "dead-letter topic")
	l.Duration(&c.DiscoveryInterval, "discovery-interval", "WAITQ_DISCOVERY_INTERVAL", def.DiscoveryInterval, "how often new event topics are looked for")
	l.Duration(&c.SessionTimeout, "kafka-session-timeout", "WAITQ_KAFKA_SESSION_TIMEOUT", def.SessionTimeout, "group session timeout: how soon a dead member's partitions move")
	l.Int(&c.MaxBatch, "max-batch", "WAITQ_MAX_BATCH", def.MaxBatch, "most messages written to Redis in one round trip")
}

// Validate implements Service.
func (c *Ingest) Validate() error {
	var errs []error
	if c.DiscoveryInterval <= 0 || c.SessionTimeout <= 0 {
		errs = append(errs, errors.New("WAITQ_DISCOVERY_INTERVAL and WAITQ_KAFKA_SESSION_TIMEOUT must be positive"))
	}
	if c.MaxBatch < 1 || c.MaxBatch > 100_000 {
		errs = append(errs, errors.New("WAITQ_MAX_BATCH must be between 1 and 100000"))
	}
	return errors.Join(append(errs, c.Kafka.validate(), c.Redis.validate())...)
}

// Run implements Service.
func (c *Ingest) Run(ctx context.Context, log *slog.Logger) error {
	store, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	// The fast track's admissions are written to the log before anyone
	// hears of them.
	pub := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: c.brokerConfig()})
	defer pub.Close()
	cons := kafkajoin.NewConsumer(kafkajoin.ConsumerConfig{
		BrokerConfig: c.brokerConfig(), GroupID: c.GroupID, DLQTopic: c.DLQTopic,
		DiscoveryInterval: c.DiscoveryInterval, SessionTimeout: c.SessionTimeout,
		MaxBatch: c.MaxBatch, Logger: log,
	}, c.store(store).WithRecorder(pub, log))
	reg := newRegistry()
	cons.RegisterMetrics(reg)
	// Health, readiness (the broker and Redis answer; writes are retried
	// meanwhile) and metrics only: the consumer serves no other route.
	e := httpkit.NewEcho(httpkit.BaseOptions{
		Logger: log, Registry: reg, MaxBodyBytes: httpkit.DefaultMaxBodyBytes,
		Ready:       func(context.Context) error { return cons.Check() },
		ReadyFields: func() map[string]any { return map[string]any{"topics": cons.Topics()} },
	})
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return cons.Run(gctx) })
	g.Go(func() error { return serveHTTP(gctx, log, c.HTTPAddr, e, c.ShutdownTimeout, nil) })
	return g.Wait()
}

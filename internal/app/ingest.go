package app

import (
	"context"
	"errors"
	"log/slog"

	"golang.org/x/sync/errgroup"

	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/redisstore"
)

// Ingest is ingest-consumer: one member of the consumer group that writes
// joins and leaves into Redis.
type Ingest struct {
	Common
	Redis
	FastTrack
	Config kafkajoin.ConsumerConfig
}

var _ Service = (*Ingest)(nil)

// Name implements Service.
func (*Ingest) Name() string { return "ingest-consumer" }

// Bind implements Service.
func (c *Ingest) Bind(l *config.Loader) {
	c.Config = kafkajoin.DefaultConsumerConfig()
	def, cfg := c.Config, &c.Config
	c.Common.bind(l, ":8082")
	bindKafka(l, &cfg.BrokerConfig)
	c.Redis.bind(l)
	c.FastTrack.bind(l, "joins")
	l.String(&cfg.GroupID, "group-id", "WAITQ_GROUP_ID", def.GroupID, "Kafka consumer group")
	l.String(&cfg.DLQTopic, "dlq-topic", "WAITQ_DLQ_TOPIC", def.DLQTopic, "dead-letter topic")
	l.Duration(&cfg.DiscoveryInterval, "discovery-interval", "WAITQ_DISCOVERY_INTERVAL", def.DiscoveryInterval, "how often new event topics are looked for")
	l.Duration(&cfg.SessionTimeout, "kafka-session-timeout", "WAITQ_KAFKA_SESSION_TIMEOUT", def.SessionTimeout, "group session timeout: how soon a dead member's partitions move")
	l.Int(&cfg.MaxBatch, "max-batch", "WAITQ_MAX_BATCH", def.MaxBatch, "most messages written to Redis in one round trip")
	l.Int(&cfg.Lanes, "write-lanes", "WAITQ_WRITE_LANES", def.Lanes, "batches written to Redis at once, each of its own partitions")
}

// Validate implements Service.
func (c *Ingest) Validate() error {
	return errors.Join(c.Config.Validate(), c.Redis.validate())
}

// Run implements Service.
func (c *Ingest) Run(ctx context.Context, log *slog.Logger) error {
	// The fast track's admissions are written to the log before anyone
	// hears of them.
	pub, err := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: c.Config.BrokerConfig})
	if err != nil {
		return err
	}
	defer pub.Close()
	live, err := c.open(redisstore.Options{FastTrack: c.batch()})
	if err != nil {
		return err
	}
	defer live.Close()
	store := recording.New(live, pub, log)
	cfg := c.Config
	cfg.Logger = log
	cons, err := kafkajoin.NewConsumer(cfg, store)
	if err != nil {
		return err
	}
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

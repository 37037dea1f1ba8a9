package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/waitq/waitq/pkg/config"
	"github.com/waitq/waitq/pkg/kafkajoin"
	"github.com/waitq/waitq/pkg/redisstore"
)

// Ingest is ingest-consumer: one member of the consumer group that writes
// joins and leaves into Redis.
type Ingest struct {
	Common
	Kafka
	RedisURL          string
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
	c.Common.bind(l, ":8082")
	c.Kafka.bind(l)
	l.String(&c.RedisURL, "redis-url", "WAITQ_REDIS_URL", "redis://127.0.0.1:6379/0", "Redis URL")
	l.String(&c.GroupID, "group-id", "WAITQ_GROUP_ID", kafkajoin.DefaultGroupID, "Kafka consumer group")
	l.String(&c.DLQTopic, "dlq-topic", "WAITQ_DLQ_TOPIC", kafkajoin.DefaultDLQTopic, "dead-letter topic")
	l.Duration(&c.DiscoveryInterval, "discovery-interval", "WAITQ_DISCOVERY_INTERVAL", 2*time.Second, "how often new event topics are looked for")
	l.Duration(&c.SessionTimeout, "kafka-session-timeout", "WAITQ_KAFKA_SESSION_TIMEOUT", 10*time.Second, "group session timeout: how soon a dead member's partitions move")
	l.Int(&c.MaxBatch, "max-batch", "WAITQ_MAX_BATCH", 500, "most messages written to Redis in one round trip")
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
	return errors.Join(append(errs, c.Kafka.validate())...)
}

// Run implements Service.
func (c *Ingest) Run(ctx context.Context, log *slog.Logger) error {
	store, err := redisstore.Dial(ctx, c.RedisURL)
	if err != nil {
		return err
	}
	defer store.Close()
	cons := kafkajoin.NewConsumer(kafkajoin.ConsumerConfig{
		Conn: c.conn(), GroupID: c.GroupID, DLQTopic: c.DLQTopic,
		DiscoveryInterval: c.DiscoveryInterval, SessionTimeout: c.SessionTimeout,
		MaxBatch: c.MaxBatch, Logger: log,
	}, store)
	reg := newRegistry()
	registerConsumerMetrics(reg, cons)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !cons.Ready() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]string{
				"code": "not_ready", "message": "the broker or Redis is not reachable; writes are being retried",
			}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "topics": cons.Topics()})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return cons.Run(gctx) })
	g.Go(func() error { return serveHTTP(gctx, log, c.HTTPAddr, mux, c.ShutdownTimeout, nil) })
	return g.Wait()
}

func registerConsumerMetrics(reg prometheus.Registerer, c *kafkajoin.Consumer) {
	counter := func(name, help string, f func(kafkajoin.ConsumerStats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f(c.Stats())) })
	}
	reg.MustRegister(
		counter("waitq_ingest_fetched_total", "Messages fetched from Kafka.", func(s kafkajoin.ConsumerStats) int64 { return s.Fetched }),
		counter("waitq_ingest_written_total", "Joins and leaves that changed a waiting line.", func(s kafkajoin.ConsumerStats) int64 { return s.Written }),
		counter("waitq_ingest_ignored_total", "Repeated joins and leaves of absent users.", func(s kafkajoin.ConsumerStats) int64 { return s.Ignored }),
		counter("waitq_ingest_dead_lettered_total", "Messages sent to the dead-letter topic.", func(s kafkajoin.ConsumerStats) int64 { return s.DeadLettered }),
		counter("waitq_ingest_retries_total", "Failed write attempts that were retried.", func(s kafkajoin.ConsumerStats) int64 { return s.Retries }),
		counter("waitq_ingest_commit_errors_total", "Offset commits that failed (the batch is redelivered).", func(s kafkajoin.ConsumerStats) int64 { return s.CommitErrors }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitq_ingest_lag_messages", Help: "Messages behind the newest, over the partitions last handled."},
			func() float64 { return float64(c.Stats().Lag) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitq_ingest_ready", Help: "1 when the broker and Redis answer."}, func() float64 {
			if c.Ready() {
				return 1
			}
			return 0
		}),
	)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

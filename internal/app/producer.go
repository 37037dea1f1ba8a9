package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
)

// MinSecretLen is the shortest ticket secret accepted.
const MinSecretLen = 16

// validateTicketSecret checks the ticket secret producer-api and ws-gateway
// share.
func validateTicketSecret(secret string) error {
	if len(secret) < MinSecretLen {
		return fmt.Errorf("WAITQ_TICKET_SECRET must be set to at least %d characters", MinSecretLen)
	}
	return nil
}

// Producer is producer-api: joins, leaves and the admin API.
type Producer struct {
	Common
	Broker kafkajoin.BrokerConfig
	Redis
	TicketSecret   string
	AdminToken     string
	TicketTTL      time.Duration
	PublishTimeout time.Duration
	BatchTimeout   time.Duration
	AllowedOrigins []string
	Limits
}

var _ Service = (*Producer)(nil)

// Name implements Service.
func (*Producer) Name() string { return "producer-api" }

// Bind implements Service.
func (p *Producer) Bind(l *config.Loader) {
	def := producer.DefaultConfig()
	p.Common.bind(l, ":8080")
	bindKafka(l, &p.Broker)
	p.Redis.bind(l)
	l.Secret(&p.TicketSecret, "ticket-secret", "WAITQ_TICKET_SECRET", "HMAC key of tickets, shared with ws-gateway (required, at least 16 characters)")
	l.Secret(&p.AdminToken, "admin-token", "WAITQ_ADMIN_TOKEN", "bearer token of the admin API (empty: admin API disabled)")
	l.Duration(&p.TicketTTL, "ticket-ttl", "WAITQ_TICKET_TTL", def.TicketTTL, "how long a ticket stays valid")
	l.Duration(&p.PublishTimeout, "publish-timeout", "WAITQ_PUBLISH_TIMEOUT", def.PublishTimeout, "longest wait for Kafka's acknowledgement before 503")
	l.List(&p.AllowedOrigins, "allowed-origins", "WAITQ_ALLOWED_ORIGINS", "", "browser origins (host patterns such as localhost:8081) allowed to call the API across origins")
	p.Limits.bind(l, "joins and leaves", def.JoinLimit)
	l.Duration(&p.BatchTimeout, "kafka-batch-timeout", "WAITQ_KAFKA_BATCH_TIMEOUT", kafkajoin.DefaultBatchTimeout, "longest a join waits to share a produce request")
}

// Validate implements Service.
func (p *Producer) Validate() error {
	var errs []error
	errs = append(errs, validateTicketSecret(p.TicketSecret))
	if p.PublishTimeout <= 0 || p.BatchTimeout <= 0 || p.TicketTTL <= 0 {
		errs = append(errs, errors.New("WAITQ_PUBLISH_TIMEOUT, WAITQ_KAFKA_BATCH_TIMEOUT and WAITQ_TICKET_TTL must be positive"))
	}
	if p.BatchTimeout >= p.PublishTimeout {
		errs = append(errs, errors.New("WAITQ_KAFKA_BATCH_TIMEOUT must be shorter than WAITQ_PUBLISH_TIMEOUT"))
	}
	return errors.Join(append(errs, p.Broker.Validate(), p.Redis.validate(), p.Limits.validate())...)
}

// Run implements Service.
func (p *Producer) Run(ctx context.Context, log *slog.Logger) error {
	store, err := p.dial(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	tickets, err := queue.NewTicketSigner(p.TicketSecret)
	if err != nil {
		return err
	}
	pub, err := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: p.Broker, BatchTimeout: p.BatchTimeout, Timeout: p.PublishTimeout})
	if err != nil {
		return err
	}
	defer func() {
		if err := pub.Close(); err != nil {
			log.Warn("closing the Kafka writer", "err", err)
		}
	}()
	reg := newRegistry()
	srv := producer.New(producer.Config{AdminToken: p.AdminToken, TicketTTL: p.TicketTTL, PublishTimeout: p.PublishTimeout, AllowedOrigins: p.AllowedOrigins,
		JoinLimit: p.limit(), ClientIPs: p.ips}, producer.Deps{
		Store: store.WithRecorder(pub, log), Topics: pub.Admin(), Publisher: pub, Tickets: tickets, Logger: log, Registry: reg,
	})
	return serveHTTP(ctx, log, p.HTTPAddr, srv, p.ShutdownTimeout, nil)
}

// newRegistry returns a registry with the Go runtime and process collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

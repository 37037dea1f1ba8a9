package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/waitq/waitq/internal/challenge"
	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/redisstore"
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
	Redis
	Config       producer.Config
	Publisher    kafkajoin.PublisherConfig // its Timeout is Config.PublishTimeout
	TicketSecret string
}

var _ Service = (*Producer)(nil)

// Name implements Service.
func (*Producer) Name() string { return "producer-api" }

// Bind implements Service.
func (p *Producer) Bind(l *config.Loader) {
	p.Config, p.Publisher = producer.DefaultConfig(), kafkajoin.DefaultPublisherConfig()
	def, cfg := p.Config, &p.Config
	p.Common.bind(l, ":8080")
	bindKafka(l, &p.Publisher.BrokerConfig)
	p.Redis.bind(l)
	l.Secret(&p.TicketSecret, "ticket-secret", "WAITQ_TICKET_SECRET", "HMAC key of tickets, shared with ws-gateway, and the seed of the visitor-identity and challenge keys (required, at least 16 characters)")
	l.Secret(&cfg.AdminToken, "admin-token", "WAITQ_ADMIN_TOKEN", "bearer token of the admin API (empty: admin API disabled)")
	l.Duration(&cfg.TicketTTL, "ticket-ttl", "WAITQ_TICKET_TTL", def.TicketTTL, "how long a ticket stays valid")
	l.Duration(&cfg.PublishTimeout, "publish-timeout", "WAITQ_PUBLISH_TIMEOUT", def.PublishTimeout, "longest wait for Kafka's acknowledgement before 503")
	l.List(&cfg.AllowedOrigins, "allowed-origins", "WAITQ_ALLOWED_ORIGINS", "", "browser origins (host patterns such as localhost:8081) allowed to call the API across origins")
	bindLimits(l, "joins and leaves", &cfg.JoinLimit, &cfg.TrustedProxies, def.JoinLimit)
	l.Bool(&cfg.TrustUserHeader, "trust-user-header", "WAITQ_TRUST_USER_HEADER", false, "take X-User-Id as the user of joins, leaves and challenges, from WAITQ_TRUSTED_PROXIES alone (required: only behind an authenticating proxy that sets it; off: visitor identities and join tokens name users)")
	l.Duration(&cfg.VisitorTTL, "visitor-ttl", "WAITQ_VISITOR_TTL", def.VisitorTTL, "how long a visitor identity (the visitor cookie, __Host-waitq_visitor) lasts")
	l.Bool(&cfg.CookieInsecure, "cookie-insecure", "WAITQ_COOKIE_INSECURE", false, "drop the visitor cookie's Secure attribute, for plain HTTP on a developer's machine (never in production)")
	l.Duration(&cfg.ChallengeTTL, "challenge-ttl", "WAITQ_CHALLENGE_TTL", def.ChallengeTTL, "how long a proof-of-work challenge may be solved and used")
	l.String(&cfg.PublicURL, "public-url", "WAITQ_PUBLIC_URL", "", "the waiting room page's public address, the base of resume links (empty: the origin of the page asking for one)")
	l.Duration(&cfg.ResumeTTL, "resume-ttl", "WAITQ_RESUME_TTL", def.ResumeTTL, "how long a resume link lasts for an event with no away policy (with one: away.keepSeconds)")
	l.Duration(&p.Publisher.BatchTimeout, "kafka-batch-timeout", "WAITQ_KAFKA_BATCH_TIMEOUT", kafkajoin.DefaultBatchTimeout, "longest a join waits to share a produce request")
}

// publisher returns the publisher's settings: one produce request lasts
// at most the publish timeout.
func (p *Producer) publisher() kafkajoin.PublisherConfig {
	c := p.Publisher
	c.Timeout = p.Config.PublishTimeout
	return c
}

// Validate implements Service.
func (p *Producer) Validate() error {
	return errors.Join(validateTicketSecret(p.TicketSecret), p.Config.Validate(), p.publisher().Validate(), p.Redis.validate())
}

// Run implements Service.
func (p *Producer) Run(ctx context.Context, log *slog.Logger) error {
	tickets, err := queue.NewTicketSigner(p.TicketSecret)
	if err != nil {
		return err
	}
	pub, err := kafkajoin.NewPublisher(p.publisher())
	if err != nil {
		return err
	}
	defer func() {
		if err := pub.Close(); err != nil {
			log.Warn("closing the Kafka writer", "err", err)
		}
	}()
	live, err := p.open(redisstore.Options{})
	if err != nil {
		return err
	}
	defer live.Close()
	store := recording.New(live, pub, log)
	reg := newRegistry()
	// Every replica derives the same challenge key from the shared secret.
	challenges, err := challenge.NewIssuer([][]byte{queue.DeriveKey(p.TicketSecret, "waitq challenge v1")}, nil)
	if err != nil {
		return err
	}
	srv, err := producer.New(p.Config, producer.Deps{
		Store: store, Topics: pub.Admin(), Publisher: pub, Tickets: tickets, Challenges: challenges, Logger: log, Registry: reg,
	})
	if err != nil {
		return err
	}
	return serveHTTP(ctx, log, p.HTTPAddr, srv, p.ShutdownTimeout, nil)
}

// newRegistry returns a registry with the Go runtime and process collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

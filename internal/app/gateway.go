package app

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"golang.org/x/sync/errgroup"

	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/mail"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/pkg/entry"
)

// Gateway is ws-gateway: live status over WebSocket and the slot monitor.
type Gateway struct {
	Common
	Broker kafkajoin.BrokerConfig
	Redis
	FastTrack
	Config       gateway.Config
	TicketSecret string
	EntryKey     string
	EntryOldKeys []string
	// Mail is the SMTP relay of the mails of being called (off without
	// WAITQ_SMTP_ADDR).
	Mail mail.Config
}

var _ Service = (*Gateway)(nil)

// Name implements Service.
func (*Gateway) Name() string { return "ws-gateway" }

// Bind implements Service.
func (g *Gateway) Bind(l *config.Loader) {
	g.Config = gateway.DefaultConfig()
	def, cfg := g.Config, &g.Config
	g.Common.bind(l, ":8081")
	bindKafka(l, &g.Broker)
	g.Redis.bind(l)
	g.FastTrack.bind(l, "releases")
	l.Secret(&g.TicketSecret, "ticket-secret", "WAITQ_TICKET_SECRET", "HMAC key of tickets, shared with producer-api, and the seed of the default entry-token key (required, at least 16 characters)")
	l.Duration(&cfg.StatusInterval, "status-interval", "WAITQ_STATUS_INTERVAL", def.StatusInterval, "how often every socket gets its status")
	l.Duration(&cfg.StatusSpread, "status-spread", "WAITQ_STATUS_SPREAD", def.StatusSpread, "part of each status interval the statuses are spread over, in 16 slices (0: half the interval)")
	l.Duration(&cfg.AdmitInterval, "admit-interval", "WAITQ_ADMIT_INTERVAL", def.AdmitInterval, "how often the slot monitor admits users")
	l.Int(&cfg.AdmitBatch, "admit-batch", "WAITQ_ADMIT_BATCH", def.AdmitBatch, "most users one event admits per monitor tick")
	l.Duration(&cfg.DisconnectGrace, "disconnect-grace", "WAITQ_DISCONNECT_GRACE", def.DisconnectGrace, "how long a waiting user may be disconnected and keep the place")
	l.Bool(&cfg.TrustUserHeader, "trust-user-header", "WAITQ_TRUST_USER_HEADER", def.TrustUserHeader, "accept the X-User-Id header instead of a ticket, from WAITQ_TRUSTED_PROXIES alone (required: behind an authenticating proxy)")
	l.List(&cfg.AllowedOrigins, "allowed-origins", "WAITQ_ALLOWED_ORIGINS", "", "browser origins (host patterns such as localhost:8089) allowed besides the gateway's own host")
	l.Int(&cfg.SendQueue, "ws-send-queue", "WAITQ_WS_SEND_QUEUE", def.SendQueue, "frames waiting per socket behind a write under way before its reader counts as too slow (1008)")
	l.Int(&cfg.WriteBuffer, "ws-write-buffer", "WAITQ_WS_WRITE_BUFFER", def.WriteBuffer, "kernel send buffer per socket in bytes (0: system default with autotuning)")
	l.Duration(&cfg.WriteTimeout, "ws-write-timeout", "WAITQ_WS_WRITE_TIMEOUT", def.WriteTimeout, "longest one frame may take to write")
	bindLimits(l, "status polls", &cfg.StatusLimit, &cfg.TrustedProxies, def.StatusLimit)
	l.Float(&cfg.ConnectLimit.PerSecond, "connect-rate", "WAITQ_CONNECT_RATE", def.ConnectLimit.PerSecond, "WebSocket connects and SSE streams opened per second per client IP, 429 past it (0: no limit)")
	l.Int(&cfg.ConnectLimit.Burst, "connect-burst", "WAITQ_CONNECT_BURST", def.ConnectLimit.Burst, "WebSocket connects and SSE streams opened at once per client IP")
	l.Float(&cfg.HoldLimit.PerSecond, "hold-rate", "WAITQ_HOLD_RATE", def.HoldLimit.PerSecond, "the buyer's calls (seat hold and give-back, release, entry token verify) per second per client IP, 429 past it; the shop's sales are not counted (0: no limit)")
	l.Int(&cfg.HoldLimit.Burst, "hold-burst", "WAITQ_HOLD_BURST", def.HoldLimit.Burst, "the buyer's calls at once per client IP")
	l.Float(&cfg.FrameLimit.PerSecond, "ws-frame-rate", "WAITQ_WS_FRAME_RATE", def.FrameLimit.PerSecond, "frames a client may send per second on one socket; past it a rate_limited error frame, and 10 refused in a row close it with 1008 (0: no limit)")
	l.Int(&cfg.FrameLimit.Burst, "ws-frame-burst", "WAITQ_WS_FRAME_BURST", def.FrameLimit.Burst, "frames a client may send at once on one socket")
	l.Secret(&g.EntryKey, "entry-key", "WAITQ_ENTRY_KEY", `Ed25519 signing key of entry tokens, "<key id>:<base64url 32-byte seed>" (empty: derived from WAITQ_TICKET_SECRET)`)
	l.List(&g.EntryOldKeys, "entry-old-keys", "WAITQ_ENTRY_OLD_KEYS", "", `public keys still accepted after a rotation, "<key id>:<base64url public key>", comma-separated`)
	l.String(&cfg.PublicURL, "public-url", "WAITQ_PUBLIC_URL", def.PublicURL, `the gateway's public base URL, the iss of its entry tokens (empty: "waitq")`)
	l.String(&cfg.ProducerURL, "producer-url", "WAITQ_PRODUCER_URL", def.ProducerURL, "producer-api's public base URL for the waiting-room page (empty: same origin)")
	l.Duration(&cfg.PingInterval, "ws-ping-interval", "WAITQ_WS_PING_INTERVAL", def.PingInterval, "how often idle sockets are pinged")
	g.bindMail(l)
}

// bindMail binds the SMTP relay's settings.
func (g *Gateway) bindMail(l *config.Loader) {
	g.Mail = mail.DefaultConfig()
	l.String(&g.Mail.Addr, "smtp-addr", "WAITQ_SMTP_ADDR", "", "host:port of the SMTP relay the mails of being called go through (empty: no mail; needs WAITQ_PUBLIC_URL)")
	l.String(&g.Mail.From, "smtp-from", "WAITQ_SMTP_FROM", "", "the mails' sender address (required with WAITQ_SMTP_ADDR)")
	l.String(&g.Mail.User, "smtp-user", "WAITQ_SMTP_USER", "", "user of the relay's AUTH PLAIN (empty: no authentication; sent only over TLS or to the local host)")
	l.Secret(&g.Mail.Password, "smtp-password", "WAITQ_SMTP_PASSWORD", "password of the relay's AUTH PLAIN")
	l.Bool(&g.Mail.StartTLS, "smtp-starttls", "WAITQ_SMTP_STARTTLS", false, "upgrade the relay's connection with STARTTLS before anything is sent (fails when it is not offered)")
}

// Validate implements Service: the gateway's own settings (gateway.Config's
// Validate) and the program's keys.
func (g *Gateway) Validate() error {
	errs := []error{validateTicketSecret(g.TicketSecret), g.Config.Validate(), g.Broker.Validate(), g.Redis.validate(), g.Mail.Validate()}
	if g.Mail.Enabled() && g.Config.PublicURL == "" {
		errs = append(errs, errors.New("WAITQ_SMTP_ADDR needs WAITQ_PUBLIC_URL, the base of the mails' resume links"))
	}
	if _, err := g.keyring(); err != nil {
		errs = append(errs, fmt.Errorf("WAITQ_ENTRY_KEY / WAITQ_ENTRY_OLD_KEYS: %w", err))
	}
	return errors.Join(errs...)
}

// Run implements Service.
func (g *Gateway) Run(ctx context.Context, log *slog.Logger) error {
	tickets, err := queue.NewTicketSigner(g.TicketSecret)
	if err != nil {
		return err
	}
	keys, err := g.keyring()
	if err != nil {
		return err
	}
	log.Info("entry tokens", "key id", keys.KeyID(), "accepted keys", len(g.EntryOldKeys)+1)
	pub, err := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: g.Broker})
	if err != nil {
		return err
	}
	defer pub.Close()
	live, err := g.open(redisstore.Options{FastTrack: g.batch()})
	if err != nil {
		return err
	}
	defer live.Close()
	store := recording.New(live, pub, log)
	reg := newRegistry()
	deps := gateway.Deps{Store: store, Publisher: pub, Tickets: tickets, Entry: keys, Logger: log, Registry: reg}
	var sender *mail.Sender
	if g.Mail.Enabled() {
		if sender, err = mail.NewSender(g.Mail, log, reg); err != nil {
			return err
		}
		deps.Mails, deps.Mailer = live, sender
		log.Info("mail on", "relay", g.Mail.Addr, "starttls", g.Mail.StartTLS)
	}
	srv, err := gateway.New(g.Config, deps)
	if err != nil {
		return err
	}
	eg, egctx := errgroup.WithContext(ctx)
	if sender != nil {
		eg.Go(func() error { return sender.Run(egctx) })
	}
	eg.Go(func() error { return srv.Run(egctx) })
	eg.Go(func() error {
		return serveHTTP(egctx, log, g.HTTPAddr, srv, g.ShutdownTimeout, func(l net.Listener) net.Listener {
			return gateway.LimitWriteBuffer(l, g.Config.WriteBuffer)
		})
	})
	return eg.Wait()
}

// keyring builds the entry-token keys from the settings.
func (g *Gateway) keyring() (*entry.Keyring, error) {
	old := map[string]ed25519.PublicKey{}
	for _, k := range g.EntryOldKeys {
		kid, pub, err := entry.ParseKey(k)
		if err != nil {
			return nil, err
		}
		old[kid] = pub
	}
	if g.EntryKey == "" {
		return entry.DerivedKeyring(g.TicketSecret, old)
	}
	kid, seed, err := entry.ParseKey(g.EntryKey)
	if err != nil {
		return nil, err
	}
	return entry.NewKeyring(kid, seed, old)
}

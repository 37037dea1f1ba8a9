package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/smtp"
	"net/textproto"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sender sends Messages through the relay of its Config, one at a time,
// from a bounded queue.
type Sender struct {
	cfg    Config
	log    *slog.Logger
	queue  chan Message
	now    func() time.Time
	sent   prometheus.Counter
	failed prometheus.Counter
}

// NewSender returns a Sender of cfg (Validate), its metrics
// waitq_mail_sent_total and waitq_mail_failed_total registered on reg.
// Call Run to send.
func NewSender(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sender{cfg: cfg, log: log, queue: make(chan Message, cfg.Queue), now: time.Now,
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "waitq_mail_sent_total",
			Help: "Mails of being called the SMTP relay accepted.",
		}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "waitq_mail_failed_total",
			Help: "Mails of being called not sent: refused, failed after every attempt, or dropped with the queue full.",
		}),
	}
	reg.MustRegister(s.sent, s.failed)
	return s, nil
}

// Send queues m and reports whether it was queued: a full queue drops it
// (counted failed, logged by its Tag).
func (s *Sender) Send(m Message) bool {
	select {
	case s.queue <- m:
		return true
	default:
		s.failed.Inc()
		s.log.Warn("mail dropped: the queue is full", "mail", m.Tag, "queue", s.cfg.Queue)
		return false
	}
}

// Run sends the queued mails until ctx ends; those still queued then are
// not sent.
func (s *Sender) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-s.queue:
			s.deliver(ctx, m)
		}
	}
}

// deliver tries m up to Attempts times while the failure is temporary.
func (s *Sender) deliver(ctx context.Context, m Message) {
	wait := s.cfg.RetryWait
	for attempt := 1; ; attempt++ {
		err := s.send(ctx, m)
		if err == nil {
			s.sent.Inc()
			return
		}
		if attempt >= s.cfg.Attempts || permanent(err) || ctx.Err() != nil {
			s.failed.Inc()
			s.log.Warn("mail not sent", "mail", m.Tag, "attempts", attempt, "err", cause(err))
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// send is one SMTP transaction of m, within the Timeout.
func (s *Sender) send(ctx context.Context, m Message) error {
	data, err := m.render(s.cfg.From, s.now())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	host, _, _ := net.SplitHostPort(s.cfg.Addr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return err
	}
	defer c.Close()
	if s.cfg.StartTLS {
		if err := c.StartTLS(&tls.Config{ServerName: host, MinVersion: tls.VersionTLS12, RootCAs: s.cfg.RootCAs}); err != nil {
			return err
		}
	}
	if s.cfg.User != "" {
		if err := c.Auth(smtp.PlainAuth("", s.cfg.User, s.cfg.Password, host)); err != nil {
			return err
		}
	}
	if err := c.Mail(s.cfg.From); err != nil {
		return err
	}
	if err := c.Rcpt(m.To); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// permanent reports a failure that trying again does not mend: a 5xx
// status, or a message that cannot be rendered.
func permanent(err error) bool {
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code >= 500
	}
	return errors.Is(err, errHeader)
}

// cause is what a log may say of err: an SMTP reply's status alone (its
// text may repeat the address), else the kind of failure.
func cause(err error) string {
	var te *textproto.Error
	var ne net.Error
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("smtp status %d", te.Code)
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, &ne):
		return "network error"
	case !strings.Contains(err.Error(), "@"):
		return err.Error()
	}
	return "smtp failure"
}

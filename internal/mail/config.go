package mail

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"strings"
	"time"
)

// Config is the SMTP relay and the queue in front of it. The program binds
// each setting to the WAITQ_ variable its comment names; an empty Addr
// turns mail off.
type Config struct {
	// Addr is the relay's host:port, WAITQ_SMTP_ADDR (empty: no mail).
	Addr string
	// From is the sender's address, WAITQ_SMTP_FROM.
	From string
	// User and Password authenticate with AUTH PLAIN when User is set,
	// WAITQ_SMTP_USER and WAITQ_SMTP_PASSWORD. net/smtp sends them only
	// over TLS, or to a relay on the local host.
	User     string
	Password string
	// StartTLS upgrades the connection before anything else is sent and
	// fails when the relay does not offer it, WAITQ_SMTP_STARTTLS.
	StartTLS bool
	// RootCAs are the CAs the relay's certificate is checked against (nil:
	// the system's); not a setting: for a relay of a private CA, and tests.
	RootCAs *x509.CertPool
	// Timeout bounds one delivery: connect, the whole transaction.
	Timeout time.Duration
	// Queue is how many mails wait to be sent; past it a mail is dropped
	// (counted failed).
	Queue int
	// Attempts is how many times a mail is tried when the relay fails for
	// a temporary cause (a 4xx status, a network error), RetryWait apart,
	// doubled each time.
	Attempts  int
	RetryWait time.Duration
}

// DefaultConfig returns the defaults: no relay, 10 s a delivery, 1,000
// mails queued, 4 attempts from 2 s apart.
func DefaultConfig() Config {
	return Config{Timeout: 10 * time.Second, Queue: 1000, Attempts: 4, RetryWait: 2 * time.Second}
}

// Enabled reports whether mail is on (a relay is configured).
func (c Config) Enabled() bool { return c.Addr != "" }

// Validate reports the invalid settings of a Config that is Enabled.
func (c Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	var errs []error
	if host, port, err := net.SplitHostPort(c.Addr); err != nil || host == "" || port == "" {
		errs = append(errs, fmt.Errorf("WAITQ_SMTP_ADDR %q must be host:port", c.Addr))
	}
	if a, err := netmail.ParseAddress(c.From); err != nil || a.Name != "" || a.Address != c.From || strings.ContainsAny(c.From, "\r\n") {
		errs = append(errs, fmt.Errorf("WAITQ_SMTP_FROM %q must be one plain address (required with WAITQ_SMTP_ADDR)", c.From))
	}
	if c.Password != "" && c.User == "" {
		errs = append(errs, errors.New("WAITQ_SMTP_PASSWORD needs WAITQ_SMTP_USER"))
	}
	if c.Timeout <= 0 || c.Queue < 1 || c.Attempts < 1 || c.RetryWait < 0 {
		errs = append(errs, errors.New("mail: the timeout, queue and attempts must be positive"))
	}
	return errors.Join(errs...)
}

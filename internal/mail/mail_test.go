package mail_test

import (
	"context"
	"io"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/internal/mail"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsmtp"
)

// startSender runs a Sender to addr until the test ends, its logs in logs.
func startSender(t *testing.T, addr string, logs io.Writer) (*mail.Sender, *prometheus.Registry) {
	t.Helper()
	cfg := mail.DefaultConfig()
	cfg.Addr, cfg.From, cfg.RetryWait, cfg.Attempts = addr, "queue@waitq.example", 50*time.Millisecond, 2
	reg := prometheus.NewRegistry()
	s, err := mail.NewSender(cfg, slog.New(slog.NewTextHandler(logs, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, reg
}

// body decodes m's quoted-printable body.
func body(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(quotedprintable.NewReader(r))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSendsThroughARealRelay: a composed mail reaches aiosmtpd with its
// headers, its subject in the page's language, the link intact.
func TestSendsThroughARealRelay(t *testing.T) {
	srv := testsmtp.Start(t)
	var logs testenv.Buffer
	s, reg := startSender(t, srv.Addr, &logs)
	link := "https://queue.example.com/?event=sale&resume=abc.def-_ghi"
	until := time.Date(2026, 11, 28, 20, 30, 0, 0, time.UTC)
	m := mail.Compose("visitor@example.com", mail.Turn{Locale: "ko-KR", Title: "겨울 세일", Link: link, Until: until})
	m.Tag = "sale call"
	if !s.Send(m) {
		t.Fatal("not queued")
	}
	got := srv.WaitFor(t, 1, 10*time.Second)[0]
	subj, err := new(mime.WordDecoder).DecodeHeader(got.Header.Get("Subject"))
	if err != nil || subj != "겨울 세일: 차례가 되었습니다" {
		t.Fatalf("subject %q %v", subj, err)
	}
	if got.Header.Get("To") != "visitor@example.com" || got.Header.Get("From") != "queue@waitq.example" || got.Header.Get("Message-Id") == "" {
		t.Fatalf("headers %v", got.Header)
	}
	if b := body(t, got.Body); !strings.Contains(b, link) || !strings.Contains(b, "2026-11-28 20:30 UTC") {
		t.Fatalf("body:\n%s", b)
	}
	if n := value(t, reg, "waitq_mail_sent_total"); n != 1 {
		t.Fatalf("sent %v", n)
	}
}

// value is the value of the counter name in reg.
func value(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestARelayDownIsAFailureLoggedWithoutTheAddress: nothing listens; the
// mail is tried, counted failed, and the log names its tag, not its address.
func TestARelayDownIsAFailureLoggedWithoutTheAddress(t *testing.T) {
	var logs testenv.Buffer
	s, reg := startSender(t, "127.0.0.1:1", &logs)
	s.Send(mail.Compose("secret.person@example.com", mail.Turn{Title: "sale", Link: "https://q.example/"}))
	deadline := time.Now().Add(5 * time.Second)
	for value(t, reg, "waitq_mail_failed_total") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("no failure counted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(logs.String(), "secret.person") || !strings.Contains(logs.String(), "mail not sent") {
		t.Fatalf("logs:\n%s", logs.String())
	}
}

// TestHeadersTakeNoLineBreak: a title with line breaks stays on the
// subject's line; an address with one is refused (never sent).
func TestHeadersTakeNoLineBreak(t *testing.T) {
	m := mail.Compose("a@example.com", mail.Turn{Title: "sale\r\nBcc: everyone@example.com", Link: "https://q.example/"})
	if strings.ContainsAny(m.Subject, "\r\n") {
		t.Fatalf("subject %q", m.Subject)
	}
	srv := testsmtp.Start(t)
	var logs testenv.Buffer
	s, reg := startSender(t, srv.Addr, &logs)
	bad := mail.Compose("a@example.com\r\nBcc: everyone@example.com", mail.Turn{Title: "sale", Link: "https://q.example/"})
	s.Send(bad)
	s.Send(m)
	got := srv.WaitFor(t, 1, 10*time.Second)
	time.Sleep(200 * time.Millisecond)
	if got = srv.Messages(t); len(got) != 1 || got[0].Header.Get("Bcc") != "" {
		t.Fatalf("%d messages, first headers %v", len(got), got[0].Header)
	}
	if n := value(t, reg, "waitq_mail_failed_total"); n != 1 {
		t.Fatalf("failed %v; want the injected one", n)
	}
}

func TestConfigValidate(t *testing.T) {
	c := mail.DefaultConfig()
	if err := c.Validate(); err != nil || c.Enabled() {
		t.Fatalf("off: %v", err)
	}
	for name, mod := range map[string]func(*mail.Config){
		"no port":            func(c *mail.Config) { c.Addr = "smtp.example.com" },
		"no from":            func(c *mail.Config) { c.From = "" },
		"a from with a name": func(c *mail.Config) { c.From = "Queue <q@example.com>" },
		"a from with CRLF":   func(c *mail.Config) { c.From = "q@example.com\r\nBcc: x@example.com" },
		"password, no user":  func(c *mail.Config) { c.Password = "p" },
	} {
		c := mail.DefaultConfig()
		c.Addr, c.From = "smtp.example.com:587", "q@example.com"
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
}

// TestStartTLSAndAuthPlain: a relay that requires STARTTLS and AUTH takes
// the mail of a Sender configured for both; without STARTTLS, or with a
// wrong password, the mail fails (counted, nothing received).
func TestStartTLSAndAuthPlain(t *testing.T) {
	srv, roots := testsmtp.StartSecure(t, "waitq", "s3cret")
	send := func(name string, mod func(*mail.Config)) float64 {
		t.Helper()
		cfg := mail.DefaultConfig()
		cfg.Addr, cfg.From, cfg.RetryWait, cfg.Attempts = srv.Addr, "queue@waitq.example", 10*time.Millisecond, 1
		cfg.StartTLS, cfg.RootCAs, cfg.User, cfg.Password = true, roots, "waitq", "s3cret"
		cfg.Timeout = 3 * time.Second // aiosmtpd answers a failed AUTH slowly
		mod(&cfg)
		reg := prometheus.NewRegistry()
		var logs testenv.Buffer
		s, err := mail.NewSender(cfg, slog.New(slog.NewTextHandler(&logs, nil)), reg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = s.Run(ctx) }()
		s.Send(mail.Compose("visitor@example.com", mail.Turn{Title: name, Link: "https://q.example/"}))
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if value(t, reg, "waitq_mail_sent_total")+value(t, reg, "waitq_mail_failed_total") > 0 {
				break
			}
		}
		if strings.Contains(logs.String(), "visitor@") || strings.Contains(logs.String(), "s3cret") {
			t.Errorf("%s: the log holds the address or the password:\n%s", name, logs.String())
		}
		return value(t, reg, "waitq_mail_sent_total")
	}
	if send("plain text", func(c *mail.Config) { c.StartTLS = false }) != 0 {
		t.Fatal("sent without STARTTLS to a relay that requires it")
	}
	if send("wrong password", func(c *mail.Config) { c.Password = "wrong" }) != 0 {
		t.Fatal("sent with a wrong password")
	}
	if send("tls and auth", func(*mail.Config) {}) != 1 {
		t.Fatal("not sent over STARTTLS with AUTH PLAIN")
	}
	if ms := srv.WaitFor(t, 1, 5*time.Second); len(ms) != 1 || ms[0].Header.Get("To") != "visitor@example.com" {
		t.Fatalf("received %d", len(ms))
	}
}

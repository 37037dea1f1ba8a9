package gateway_test

import (
	"context"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/mail"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsmtp"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

var linkRE = regexp.MustCompile(`https://queue\.example\.test/\?event=[^\s&]+&resume=[A-Za-z0-9._~%-]+`)

// TestACalledAddressIsMailedItsResumeLink: through a real SMTP server, the
// slot monitor mails a called user the link whose resume token carries
// their place for the claim window, in the page's language; at
// away.notifyAhead the early mail goes to the one near the head; each goes
// once, and a mailed call's address is gone.
func TestACalledAddressIsMailedItsResumeLink(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	smtp := testsmtp.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mc := mail.DefaultConfig()
	mc.Addr, mc.From = smtp.Addr, "queue@waitq.example"
	sender, err := mail.NewSender(mc, testenv.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = sender.Run(ctx) }()
	tickets, _ := queue.NewTicketSigner(ticketSecret)
	cfg := gateway.Config{PublicURL: "https://queue.example.test", AdmitInterval: time.Hour}
	gw, err := gateway.New(cfg, gateway.Deps{Store: sys.Store, Publisher: sys.Pub, Tickets: tickets, Mails: sys.Store, Mailer: sender, Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ev := testenv.EventID(t)
	away := queue.Away{KeepSeconds: 1800, ClaimSeconds: 600, NotifyAhead: 1}
	e := queue.Event{ID: ev, Capacity: 1, StaySeconds: 60, State: queue.StateOpen, Partitions: 1, Away: away, Page: &queue.Page{Title: "Sale", Locale: "ja"}}
	if _, err := sys.Store.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	var joins []queue.Message
	for i, u := range []string{"u0", "u1", "u2"} {
		joins = append(joins, queue.NewMessage(queue.OpJoin, ev, u, int64(i+1)))
	}
	if _, err := sys.Store.Ingest(ctx, joins, 0); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"u0", "u2"} {
		if err := sys.Store.SetAddress(ctx, ev, u, u+"@example.com"); err != nil {
			t.Fatal(err)
		}
	}
	// u0's page closed long ago: away when their turn comes.
	now := time.Now()
	sys.Store.Client().ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u0", Score: float64(now.Add(-5 * time.Minute).UnixMilli())})
	gw.MonitorTick(ctx)

	got := map[string]struct{ subject, link string }{}
	for _, m := range smtp.WaitFor(t, 2, 10*time.Second) {
		subj, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
		b, _ := io.ReadAll(quotedprintable.NewReader(m.Body))
		got[m.Header.Get("To")] = struct{ subject, link string }{subj, linkRE.FindString(string(b))}
	}
	for to, want := range map[string]struct {
		subject, user string
		place         int64
		ttl           time.Duration
	}{
		"u0@example.com": {"Sale：順番が来ました", "u0", 1, 600 * time.Second},
		"u2@example.com": {"Sale：まもなく順番です", "u2", 3, 1800 * time.Second},
	} {
		m, ok := got[to]
		if !ok || m.subject != want.subject || m.link == "" {
			t.Fatalf("mail to %s: %+v (all: %+v)", to, m, got)
		}
		u, _ := url.Parse(m.link)
		r, err := tickets.VerifyResume(u.Query().Get("resume"), ev, time.Now())
		if err != nil || u.Query().Get("event") != ev || r.UserID != want.user || r.Place != want.place {
			t.Fatalf("%s's link %s: %+v %v", to, m.link, r, err)
		}
		if left := time.Until(time.UnixMilli(r.Expires)); left > want.ttl || left < want.ttl-time.Minute {
			t.Errorf("%s's link lasts %v; want %v", to, left, want.ttl)
		}
	}
	if n, _ := sys.Store.Client().HLen(ctx, redisstore.AddressesKey(ev)).Result(); n != 1 {
		t.Fatalf("%d addresses kept; want u2's alone (u0's call was its last mail)", n)
	}
	gw.MonitorTick(ctx)
	time.Sleep(300 * time.Millisecond)
	if ms := smtp.Messages(t); len(ms) != 2 {
		t.Fatalf("%d mails after a second tick; want each mail once", len(ms))
	}
}

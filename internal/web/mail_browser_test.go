package web_test

import (
	"context"
	"io"
	"mime/quotedprintable"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/internal/mail"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsmtp"
)

// TestTheMailLeadsToTheShop: a visitor leaves an address and closes the
// page; their turn comes while they are away, and a real SMTP server gets
// the mail of the call. Its link, opened in another browser (the phone),
// carries the turn there: that browser is admitted at once and sent on
// to the shop with its entry token; the first browser's place moved.
func TestTheMailLeadsToTheShop(t *testing.T) {
	chrome := chromium(t)
	smtp := testsmtp.Start(t)
	mc := mail.DefaultConfig()
	mc.Addr, mc.From = smtp.Addr, "queue@waitq.example"
	sender, err := mail.NewSender(mc, testenv.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	mctx, stopMail := context.WithCancel(context.Background())
	t.Cleanup(stopMail)
	go func() { _ = sender.Run(mctx) }()
	st := startStackWith(t, "t", nil, sender)
	sys, ctx := st.sys, context.Background()

	var mu sync.Mutex
	var shopTokens []string
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		shopTokens = append(shopTokens, r.URL.Query().Get("waitq_token"))
		mu.Unlock()
		io.WriteString(w, "<!doctype html><title>The shop</title><p>the shop</p>")
	}))
	t.Cleanup(shop.Close)
	ev := awayEvent(t, st)
	e, err := sys.Store.Event(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	e.TargetURL = shop.URL + "/sale"
	if _, err := sys.Store.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}

	// The desktop's tab, closed once the address is left: its socket gone
	// for good (a page only navigated away may linger a moment, and a
	// socket still open reads the call and claims it).
	desk, closeDesk := chromedp.NewContext(browser(t, chrome))
	var user string
	if err := chromedp.Run(desk, joinInPage(st.page+"/?event="+ev, &user)); err != nil {
		t.Fatalf("join: %v", err)
	}
	if err := sys.Store.SetAddress(ctx, ev, user, "visitor@example.com"); err != nil {
		t.Fatal(err)
	}
	closeDesk()
	awaySince(t, st, ev, user, 2*time.Hour)
	rdb := sys.Store.Client()
	if _, _, err := sys.Store.Release(ctx, ev, "ahead", time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	st.gw.MonitorTick(ctx) // the turn comes: called, mailed
	if ok, _ := rdb.ZScore(ctx, redisstore.CalledKey(ev), user).Result(); ok == 0 {
		hs, _ := rdb.ZScore(ctx, redisstore.HoldersKey(ev), user).Result()
		ws, _ := rdb.ZRangeWithScores(ctx, redisstore.WaitingKey(ev), 0, -1).Result()
		seen, _ := rdb.ZRangeWithScores(ctx, redisstore.SeenKey(ev), 0, -1).Result()
		t.Fatalf("the user was not called (holding until %v; line %v; seen %v)", hs, ws, seen)
	}

	msgs := smtp.WaitFor(t, 1, 20*time.Second)
	body, _ := io.ReadAll(quotedprintable.NewReader(msgs[0].Body))
	link := regexp.MustCompile(regexp.QuoteMeta(st.page) + `/\?event=[^\s&]+&resume=[A-Za-z0-9._~%-]+`).FindString(string(body))
	if msgs[0].Header.Get("To") != "visitor@example.com" || link == "" {
		t.Fatalf("the mail to %q holds no link to the page: %s", msgs[0].Header.Get("To"), body)
	}
	phone := browser(t, chrome)
	if err := chromedp.Run(phone, chromedp.Navigate(link)); err != nil {
		t.Fatalf("the mail's link: %v", err)
	}
	var got []string
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got[:0], shopTokens...)
		return len(got) > 0, "the phone at the shop"
	})
	if got[0] == "" {
		t.Fatalf("the shop got no entry token: %q", got)
	}
	tok, err := st.keys.WithIssuer(st.page).Verify(got[0], ev, time.Now())
	if err != nil || tok.UserID == user || !queue.IsVisitorID(tok.UserID) {
		t.Fatalf("the shop's token: %+v, %v; want the phone's own visitor, not %s", tok, err, user)
	}
	if p, _ := sys.Store.Status(ctx, ev, []string{user}, time.Now().UnixMilli()); p.Places[0].Turn != queue.TurnMoved {
		t.Fatalf("the desktop's place after the phone took it: %+v; want moved", p.Places[0])
	}
}

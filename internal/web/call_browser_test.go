package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitq/waitq/internal/redisstore"
)

// recordCalls keeps every title a page sets in window.titles and counts
// the tones it starts in window.tones, from its first script on.
const recordCalls = `(() => {
	const d = Object.getOwnPropertyDescriptor(Document.prototype, "title");
	window.titles = [];
	Object.defineProperty(Document.prototype, "title", { configurable: true, get: d.get,
		set(v) { window.titles.push(v); d.set.call(this, v); } });
	window.tones = 0;
	const start = OscillatorNode.prototype.start;
	OscillatorNode.prototype.start = function (...a) { window.tones++; return start.apply(this, a); };
})()`

// TestTheTurnCallsInARealBrowser: the page leaves an email address through
// its form (kept in Redis); a called status turns the tab's title to
// "▶ Your turn – …" with a tone; a page opened again after its person was
// called is admitted at once, and calls the turn too (title, tone).
func TestTheTurnCallsInARealBrowser(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	sys, ctx := st.sys, context.Background()
	ev := awayEvent(t, st)

	bctx := browser(t, chrome, noPageCache)
	var user, called string
	if err := chromedp.Run(bctx,
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, err := page.AddScriptToEvaluateOnNewDocument(recordCalls).Do(ctx)
			return err
		}),
		joinInPage(st.page+"/?event="+ev, &user),
		chromedp.WaitVisible("#mail-form"),
		chromedp.SendKeys("#mail", "visitor@example.com", chromedp.ByQuery),
		chromedp.Click(`#mail-form button[type="submit"]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector("#mail-status").textContent.includes("visitor@example.com")`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		// The frame a page that reads its called turn gets (the status
		// rounds' next read admits it).
		chromedp.Evaluate(`onFrame({type: "status", state: "called", eventId: "`+ev+`", claimUntil: Date.now() + 600000}), document.title + (window.tones > 0 ? " (tone)" : "")`, &called),
	); err != nil {
		t.Fatalf("the mail form: %v", err)
	}
	if called != "▶ Your turn – Waiting room (tone)" {
		t.Fatalf("a called page's title: %q", called)
	}
	if v, _ := sys.Store.Client().HGet(ctx, redisstore.AddressesKey(ev), user).Result(); v != "0|visitor@example.com" {
		t.Fatalf("the address kept: %q", v)
	}
	// The page closes; its person is away past the grace when the slot
	// frees: called.
	if err := chromedp.Run(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	awaySince(t, st, ev, user, 2*time.Hour)
	if _, _, err := sys.Store.Release(ctx, ev, "ahead", time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	st.gw.MonitorTick(ctx)
	if ok, _ := sys.Store.Client().ZScore(ctx, redisstore.CalledKey(ev), user).Result(); ok == 0 {
		t.Fatal("the user was not called")
	}
	if err := chromedp.Run(bctx,
		chromedp.Navigate(st.page+"/?event="+ev),
		chromedp.WaitVisible("#admitted"),
		chromedp.Poll(`document.title === "It is your turn — Waiting room" && window.tones > 0`, nil, chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		var titles []string
		_ = chromedp.Run(bctx, chromedp.Evaluate(`window.titles`, &titles))
		t.Fatalf("the call in the page: %v (titles %q)", err, titles)
	}
}

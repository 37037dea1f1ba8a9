package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestFairnessReportInThePageAndTheConsole drives chromium: a person
// admitted after two people who joined after them reads their own line
// under the turn ("you joined at …; 2 people who joined after you got in
// before you"), and the console's fairness panel shows the event's report,
// in English and in Korean.
func TestFairnessReportInThePageAndTheConsole(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "admin-secret")
	sys := st.sys
	ctx := context.Background()
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "holder", 1)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		st.gw.MonitorTick(ctx)
		s, err := sys.Store.EventStatus(ctx, ev, time.Now().UnixMilli())
		return err == nil && s.Holders == 1, "the holder is not admitted"
	})
	page := browser(t, chrome)
	var user string
	if err := chromedp.Run(page, joinInPage(st.page+"/?event="+ev, &user), chromedp.WaitVisible("#line")); err != nil {
		t.Fatalf("join in the page: %v", err)
	}
	// Two people who joined after the page's user were admitted before it,
	// as a late ingest or a claimed turn leaves them (the store's tests drive
	// those): their places in the order, after the user's.
	later := float64(time.Now().Add(time.Minute).UnixMilli())
	c := sys.Store.Client()
	c.ZAdd(ctx, redisstore.OrderKey(ev), redis.Z{Member: "later-1", Score: later}, redis.Z{Member: "later-2", Score: later + 1})
	c.HIncrBy(ctx, redisstore.StatsKey(ev), "orderTotal", 2)
	if _, _, err := sys.Store.Release(ctx, ev, "holder", time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	st.gw.MonitorTick(ctx)
	if err := chromedp.Run(page,
		chromedp.WaitVisible("#admitted"),
		chromedp.WaitVisible("#own-order"),
		eval(`/^You joined at .+; 2 people who joined after you got in before you\.$/.test(document.querySelector("#own-order").textContent)`),
	); err != nil {
		t.Fatalf("the admitted person's own line: %v", err)
	}
	console := browser(t, chrome)
	var shot []byte
	if err := chromedp.Run(console,
		size(1440, 1000),
		signIn(st.page, "admin-secret"),
		eval(`document.querySelector("#fair-report .fr-order")?.textContent === "2 inverted pairs over 4 admissions (Kendall tau distance 0.333333)"`),
		text("#fair-report .fr-kind", "A first-come line: admitted in join order"),
		eval(`document.querySelector("#fair-report .fr-wait").textContent.startsWith("time in line p50 ≤ ")`),
		chromedp.ScrollIntoView("#fair-title", chromedp.ByQuery),
		chromedp.CaptureScreenshot(&shot),
		chromedp.Navigate(st.page+"/admin.html?lang=ko"),
		text("#fair-title", "공정성 보고서"),
		eval(`document.querySelector("#fair-report .fr-order")?.textContent === "입장 4건 중 순서가 뒤바뀐 쌍 2개 (켄달 타우 거리 0.333333)"`),
	); err != nil {
		var got string
		_ = chromedp.Run(console, chromedp.Evaluate(`document.querySelector("#fair-report").innerText`, &got))
		t.Fatalf("the console's fairness report: %v; it shows %q", err, got)
	}
	saveScreenshot(t, "console-fairness.png", shot)
}

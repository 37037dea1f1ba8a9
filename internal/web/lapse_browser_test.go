package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestALapsedTurnInARealBrowser: a person away when their turn came and
// not back within the claim window opens the page again: it says in words
// that the turn passed, and its link joins the line again, at the back.
func TestALapsedTurnInARealBrowser(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	sys, ctx := st.sys, context.Background()
	ev := awayEvent(t, st)

	bctx := browser(t, chrome, noPageCache)
	var user string
	if err := chromedp.Run(bctx, joinInPage(st.page+"/?event="+ev, &user), chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("join: %v", err)
	}
	awaySince(t, st, ev, user, 2*time.Hour)
	rdb := sys.Store.Client()
	if _, _, err := sys.Store.Release(ctx, ev, "ahead", time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	st.gw.MonitorTick(ctx)
	if ok, _ := rdb.ZScore(ctx, redisstore.CalledKey(ev), user).Result(); ok == 0 {
		t.Fatal("the user was not called")
	}
	// The claim window closes before the person is back: the turn lapses.
	rdb.ZAdd(ctx, redisstore.CalledKey(ev), redis.Z{Member: user, Score: float64(time.Now().Add(-time.Second).UnixMilli())})
	st.gw.MonitorTick(ctx)
	if ok, _ := rdb.ZScore(ctx, redisstore.LapsedKey(ev), user).Result(); ok == 0 {
		t.Fatal("the turn did not lapse")
	}
	sys.Join(ev, "behind", time.Now().UnixMilli())
	var said string
	if err := chromedp.Run(bctx,
		chromedp.Navigate(st.page+"/?event="+ev),
		chromedp.WaitVisible("#released"),
		chromedp.Text("#released", &said),
	); err != nil {
		t.Fatalf("the lapsed page: %v", err)
	}
	if !strings.Contains(said, "time to come back for it has passed") || !strings.Contains(said, "Join the line again") {
		t.Fatalf("the lapsed page says %q", said)
	}
	var again string
	if err := chromedp.Run(bctx, chromedp.Evaluate(`document.querySelector("#released a").href`, &again)); err != nil {
		t.Fatalf("the link to join again: %v", err)
	}
	if err := chromedp.Run(bctx,
		chromedp.Navigate(again),
		chromedp.Poll(`document.querySelector("#position") && document.querySelector("#position").textContent === "2"`, nil, chromedp.WithPollingTimeout(30*time.Second)),
	); err != nil {
		t.Fatalf("joining again from the lapsed page (%q): %v", again, err)
	}
}

// awayEvent is an event of one slot that keeps places while away (12 h, a
// 10-minute claim window) whose slot "ahead" holds: the next in line waits.
func awayEvent(t *testing.T, st *stack) string {
	t.Helper()
	sys, ctx := st.sys, context.Background()
	ev := testenv.EventID(t)
	e := sys.CreateEvent(ev, 1, 1)
	e.Away = queue.Away{KeepSeconds: 12 * 3600, ClaimSeconds: 600}
	if _, err := sys.Store.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	sys.Join(ev, "ahead", 1)
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		n, _ := sys.Store.Client().ZCard(ctx, redisstore.WaitingKey(ev)).Result()
		return n == 1, "ahead in line"
	})
	st.gw.MonitorTick(ctx) // "ahead" holds the slot
	return ev
}

// TestAPlaceOutlivesAClosedPage: a page closed for longer than the
// disconnect grace (once, the place was lost after it) and opened again
// finds the same place: the same score in the line, the same ticket (no
// second join).
func TestAPlaceOutlivesAClosedPage(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	sys, ctx := st.sys, context.Background()
	ev := awayEvent(t, st)
	bctx := browser(t, chrome, noPageCache)
	var user, before string
	if err := chromedp.Run(bctx, joinInPage(st.page+"/?event="+ev, &user),
		chromedp.Poll(`document.querySelector("#position").textContent === "1"`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(`JSON.parse(localStorage.getItem("waitq:`+ev+`")).ticket`, &before),
		chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("join: %v", err)
	}
	sys.Join(ev, "behind", time.Now().UnixMilli())
	rdb := sys.Store.Client()
	score, err := rdb.ZScore(ctx, redisstore.WaitingKey(ev), user).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Gone for ten minutes, far past the grace: ticks sweep and admit.
	awaySince(t, st, ev, user, 10*time.Minute)
	st.gw.MonitorTick(ctx)
	var after string
	if err := chromedp.Run(bctx, chromedp.Navigate(st.page+"/?event="+ev),
		chromedp.Poll(`document.querySelector("#position").textContent === "1"`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(`JSON.parse(localStorage.getItem("waitq:`+ev+`")).ticket`, &after)); err != nil {
		t.Fatalf("the page opened again: %v", err)
	}
	if got, err := rdb.ZScore(ctx, redisstore.WaitingKey(ev), user).Result(); err != nil || got != score {
		t.Fatalf("the place after the page came back: %v, %v; want the same score %v", got, err, score)
	}
	if after != before {
		t.Fatalf("the page joined again: ticket %q, was %q", after, before)
	}
}

// awaySince makes user, whose page closed, away in ev since d ago: once the
// gateway let go of the presence the closed socket held (a let-go after it
// would make them present again, at its time), their presence goes d back.
func awaySince(t *testing.T, st *stack, ev, user string, d time.Duration) {
	t.Helper()
	rdb, ctx := st.sys.Store.Client(), context.Background()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		s, err := rdb.ZScore(ctx, redisstore.SeenKey(ev), user).Result()
		return err == nil && s < 1<<50, "the gateway letting go of the closed page's presence"
	})
	rdb.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: user, Score: float64(time.Now().Add(-d).UnixMilli())})
}

// noPageCache turns the browser's back-forward cache off: a page navigated
// away from is gone, its socket closed, as a tab closed (with the cache, it
// stays open in the background, reading its status).
var noPageCache = chromedp.Flag("disable-features", "site-per-process,Translate,BlinkGenPropertyTrees,BackForwardCache")

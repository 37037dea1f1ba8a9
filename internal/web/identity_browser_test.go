package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestOnePlacePerBrowser: the page joins by itself as the visitor identity
// producer-api gave this browser. A refresh, a second tab, and the page's
// storage lost (the place re-joined with the same cookie) all show the
// same place; a second browser profile is a second person, behind.
func TestOnePlacePerBrowser(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	ev := testenv.EventID(t)
	st.sys.CreateEvent(ev, 1, 1)
	st.sys.Join(ev, "ahead", 1) // admission waits for a monitor tick: nobody moves
	room := st.page + "/?event=" + ev

	ctx := browser(t, chrome)
	var user, refreshed, tab, rejoined string
	if err := chromedp.Run(ctx, joinInPage(room, &user), text("#position", "2"), text("#total", "2")); err != nil {
		t.Fatalf("the first visit: %v", err)
	}
	if !queue.IsVisitorID(user) {
		t.Fatalf("the place is held as %q, not a visitor identity", user)
	}
	var shot []byte
	if err := chromedp.Run(ctx,
		chromedp.Reload(), chromedp.WaitVisible("#line"), placeUser(&refreshed),
		text("#position", "2"), text("#total", "2"),
		chromedp.FullScreenshot(&shot, 100),
	); err != nil {
		t.Fatalf("after a refresh: %v", err)
	}
	saveScreenshot(t, "one-place-refreshed.png", shot)
	tabCtx, closeTab := chromedp.NewContext(ctx) // a second tab of the same browser
	defer closeTab()
	// Each tab in front while it is driven: a hidden tab draws no frames,
	// and the test's polls wait for frames.
	if err := chromedp.Run(tabCtx, chromedp.Navigate(room), toFront(), placeUser(&tab), text("#position", "2"), text("#total", "2")); err != nil {
		t.Fatalf("a second tab: %v", err)
	}
	// The page's storage lost: it joins again, and the cookie's identity
	// keeps the first place.
	if err := chromedp.Run(ctx,
		toFront(),
		chromedp.Evaluate(`localStorage.clear()`, nil),
		chromedp.Reload(), chromedp.WaitVisible("#line"), placeUser(&rejoined),
		text("#position", "2"), text("#total", "2"),
	); err != nil {
		t.Fatalf("a join again from the same browser: %v", err)
	}
	if refreshed != user || tab != user || rejoined != user {
		t.Fatalf("one browser held %q, %q (refresh), %q (tab), %q (join again): want one identity", user, refreshed, tab, rejoined)
	}

	// The page's joins carried its visit's key (Idempotency-Key): the line
	// keeps its digest.
	if v := st.sys.Store.Client().HGet(context.Background(), redisstore.JoinKeysKey(ev), user).Val(); len(v) != len(redisstore.JoinKeyDigest("any")) {
		t.Fatalf("the visit kept for %s is %q: the page sent no Idempotency-Key", user, v)
	}

	other := browser(t, chrome) // another profile: another person
	var second string
	if err := chromedp.Run(other, joinInPage(room, &second), text("#position", "3"), text("#total", "3")); err != nil {
		t.Fatalf("a second profile: %v", err)
	}
	if second == user || !queue.IsVisitorID(second) {
		t.Fatalf("the second profile holds %q; the first %q", second, user)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		w := st.sys.Waiting(ev)
		return len(w) == 3, fmt.Sprintf("line %v: want ahead and two browsers", w)
	})
}

// toFront brings the context's tab to the front.
func toFront() chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error { return page.BringToFront().Do(ctx) })
}

// TestChallengeInARealBrowser: an event that asks for a proof of work gets
// it from the page with no action of the person: the page's worker solves
// the challenge, the page shows its progress, and the join carries the
// solution (counted solved by producer-api).
func TestChallengeInARealBrowser(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	ev := testenv.EventID(t)
	e := st.sys.CreateEvent(ev, 1, 1)
	e.Challenge = &queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: 17}
	if _, err := st.sys.Store.PutEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	// The worker's messages, as the page received them.
	const record = `window.__pow = [];
		const RealWorker = window.Worker;
		window.Worker = class extends RealWorker {
			constructor(...a) { super(...a); this.addEventListener("message", (m) => window.__pow.push(m.data.type)); }
		};`
	ctx := browser(t, chrome)
	var user string
	var shot []byte
	var seen []string
	if err := chromedp.Run(ctx,
		beforePage(record),
		chromedp.Navigate(st.page+"/?event="+ev),
		chromedp.WaitVisible("#pow"),
		chromedp.FullScreenshot(&shot, 100),
		placeUser(&user),
		chromedp.WaitVisible("#line"),
		text("#position", "1"),
		chromedp.Evaluate(`window.__pow`, &seen),
	); err != nil {
		t.Fatalf("a join with a challenge: %v", err)
	}
	saveScreenshot(t, "challenge-progress.png", shot)
	if len(seen) == 0 || seen[len(seen)-1] != "solved" {
		t.Fatalf("the worker said %v; want it solved", seen)
	}
	status, err := st.sys.Store.EventStatus(context.Background(), ev, time.Now().UnixMilli())
	if err != nil || status.Door.ChallengesSolved != 1 || status.Door.ChallengesIssued != 1 {
		t.Fatalf("door %+v %v: want one challenge issued and solved", status.Door, err)
	}
}

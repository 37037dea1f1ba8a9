package web_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// signIn opens the console at page and signs in with token.
func signIn(page, token string) chromedp.Tasks {
	return chromedp.Tasks{
		chromedp.Navigate(page + "/admin.html"),
		eval(`document.querySelector("#lang").options.length > 0`), // the script has taken the form over
		chromedp.SetValue("#admin-token", token, chromedp.ByQuery),
		chromedp.Click(`#auth button`, chromedp.ByQuery),
		chromedp.WaitVisible("#event-view"),
	}
}

// chartNow waits until the chart id of the console shows figures for
// which the JS condition cond holds over n (its latest values) and points
// (its samples).
func chartNow(id, cond string) chromedp.Action {
	return eval(fmt.Sprintf(`(() => { const f = document.querySelector('figure[data-chart=%q]'); if (!f) return false;
		const n = JSON.parse(f.dataset.now || "{}"), points = Number(f.dataset.points); return %s; })()`, id, cond))
}

// TestConsoleChartsTheSaleAsItHappens drives the console in chromium
// against a running sale: the charts of line length, admissions a minute,
// holders against capacity and the shop's p95 move with it, with text
// alternatives; lowering the capacity asks first (cancelled: nothing
// changes), and so does pausing (confirmed: paused); the admin token is
// kept for the tab only.
func TestConsoleChartsTheSaleAsItHappens(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "admin-secret")
	ev := testenv.EventID(t)
	e := st.sys.CreateEvent(ev, 2, 1)
	e.Adaptive = &queue.Adaptive{TargetLatencyMs: 400}
	e.AdmitPerMinute = 600
	*e.Adaptive = e.Adaptive.WithDefaults(600)
	if _, err := st.sys.Store.PutEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t, chrome)
	if err := chromedp.Run(ctx,
		size(1440, 1000),
		signIn(st.page, "admin-secret"),
		eval(fmt.Sprintf(`document.querySelector("#view-event").value === %q`, ev)),
		chartNow("waiting", `n.waiting === 0 && points >= 1`),
	); err != nil {
		t.Fatalf("the console: %v", err)
	}
	for i := range 3 {
		st.sys.Join(ev, fmt.Sprintf("buyer-%d", i), time.Now().UnixMilli())
	}
	if err := chromedp.Run(ctx,
		chartNow("waiting", `n.waiting === 3`),
		eval(`document.querySelector('figure[data-chart=waiting] svg').getAttribute("aria-label").startsWith("Line length: now people waiting 3")`),
	); err != nil {
		t.Fatalf("the line's chart: %v", err)
	}
	postHealth(t, st.api, ev, "admin-secret", `{"reporter":"shop","windowMs":10000,"requests":50,"p95Ms":250}`, http.StatusNoContent)
	st.gw.MonitorTick(context.Background()) // two are admitted: the capacity
	var shot []byte
	if err := chromedp.Run(ctx,
		chartNow("holders", `n.holders === 2 && n.capacity === 2`),
		chartNow("waiting", `n.waiting === 1`),
		chartNow("admissions", `n.perMinute > 0 && n.rate > 0`),
		chartNow("p95", `n.p95 === 250 && n.target === 400`),
		eval(`document.querySelector('figure[data-chart=p95] svg').getAttribute("aria-label").startsWith("Shop's p95 against the target: now p95 250 ms, target 400 ms")`),
		eval(`document.querySelectorAll("#charts svg polyline").length >= 4 && document.querySelectorAll("#charts svg circle.dot").length === 7`),
		eval(noHorizontalScroll),
		chromedp.FullScreenshot(&shot, 100),
	); err != nil {
		t.Fatalf("the charts after admissions: %v", err)
	}
	saveScreenshot(t, "console.png", shot)
	var kept, local string
	if err := chromedp.Run(ctx,
		chromedp.Evaluate(`sessionStorage.getItem("waitq:admin-token")`, &kept),
		chromedp.Evaluate(`JSON.stringify(Object.keys(localStorage))`, &local),
	); err != nil || kept != "admin-secret" || strings.Contains(local, "admin") {
		t.Fatalf("the token in sessionStorage %q, localStorage keys %s, %v", kept, local, err)
	}

	// Lowering the capacity asks; cancelled, nothing changes.
	if err := chromedp.Run(ctx,
		chromedp.SetValue("#cap-event", ev, chromedp.ByQuery),
		chromedp.SetValue("#cap-value", "1", chromedp.ByQuery),
		chromedp.Click(`#capacity-form button`, chromedp.ByQuery),
		chromedp.WaitVisible("#confirm"),
		text("#confirm-text", "From 2 to 1 holders at once: nobody is admitted until fewer than 1 hold a slot (2 do now)."),
		chromedp.Click("#confirm-cancel", chromedp.ByQuery),
		text("#cap-status", "Nothing changed: "+ev+" is as it was."),
	); err != nil {
		t.Fatalf("a lower capacity, cancelled: %v", err)
	}
	if e, err := st.sys.Store.Event(context.Background(), ev); err != nil || e.Capacity != 2 {
		t.Fatalf("after a cancelled change: %+v %v", e, err)
	}
	// Pausing asks; confirmed, the sale pauses.
	if err := chromedp.Run(ctx,
		chromedp.SetValue("#cap-value", "", chromedp.ByQuery),
		chromedp.SetValue("#cap-state", "paused", chromedp.ByQuery),
		chromedp.Click(`#capacity-form button`, chromedp.ByQuery),
		chromedp.WaitVisible("#confirm"),
		text("#confirm-title", "Pause "+ev+"?"),
		chromedp.Click("#confirm-ok", chromedp.ByQuery),
		eval(`document.querySelector("#cap-status").textContent.startsWith("`+ev+` is now paused")`),
	); err != nil {
		t.Fatalf("a pause, confirmed: %v", err)
	}
	if e, err := st.sys.Store.Event(context.Background(), ev); err != nil || e.State != queue.StatePaused {
		t.Fatalf("after a confirmed pause: %+v %v", e, err)
	}
}

// TestConsoleEditsPageChallengeAndJoinTokens drives the console's forms in
// chromium: the waiting room page's branding (and an API refusal shown),
// the proof-of-work challenge with the door's figures, and join token
// keys added and removed, checked in the store, no secret ever in the
// page.
func TestConsoleEditsPageChallengeAndJoinTokens(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "admin-secret")
	ev := testenv.EventID(t)
	st.sys.CreateEvent(ev, 3, 1)
	bg := context.Background()
	ctx := browser(t, chrome)
	if err := chromedp.Run(ctx,
		signIn(st.page, "admin-secret"),
		eval(fmt.Sprintf(`document.querySelector("#pg-event").value === %q`, ev)),
		chromedp.SetValue("#pg-logo", "http://cdn.example/logo.png", chromedp.ByQuery),
		chromedp.Click(`#page-form button`, chromedp.ByQuery),
		eval(`document.querySelector("#pg-status").textContent.startsWith("page.logoUrl must be an absolute https URL")`),
		chromedp.SetValue("#pg-title", "봄 한정 판매", chromedp.ByQuery),
		chromedp.SetValue("#pg-message", "잠시만 기다려 주세요.", chromedp.ByQuery),
		chromedp.SetValue("#pg-logo", "https://cdn.example/logo.png", chromedp.ByQuery),
		chromedp.SetValue("#pg-accent", "#0b6e4f", chromedp.ByQuery),
		chromedp.SetValue("#pg-locale", "ko", chromedp.ByQuery),
		chromedp.Click(`#page-form button`, chromedp.ByQuery),
		text("#pg-status", ev+`'s waiting room shows "봄 한정 판매" now.`),
	); err != nil {
		t.Fatalf("the page form: %v", err)
	}
	want := queue.Page{Title: "봄 한정 판매", Message: "잠시만 기다려 주세요.", LogoURL: "https://cdn.example/logo.png", AccentColor: "#0b6e4f", Locale: "ko"}
	if e, err := st.sys.Store.Event(bg, ev); err != nil || e.Page == nil || *e.Page != want {
		t.Fatalf("the stored page %+v, %v; want %+v", e.Page, err, want)
	}

	if err := chromedp.Run(ctx,
		chromedp.SetValue("#ch-mode", "fixed", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#ch-mode").dispatchEvent(new Event("change")); 0`, nil),
		chromedp.WaitVisible("#ch-difficulty"),
		chromedp.SetValue("#ch-difficulty", "8", chromedp.ByQuery),
		chromedp.Click(`#challenge-form button`, chromedp.ByQuery),
		text("#ch-status", ev+" asks every join for a 8-bit challenge."),
		eval(`document.querySelector("#view-door").textContent.startsWith("Door: fixed, 8 bits now; 0 issued, 0 solved, 0 refused")`),
		eval(fmt.Sprintf(`[...document.querySelectorAll("#events tbody tr")].some(r => r.cells[0].textContent === %q && r.cells[11].textContent.startsWith("fixed, 8 bits now"))`, ev)),
	); err != nil {
		t.Fatalf("the challenge form: %v", err)
	}
	if e, err := st.sys.Store.Event(bg, ev); err != nil || e.Challenge == nil || *e.Challenge != (queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: 8}) {
		t.Fatalf("the stored challenge %+v, %v", e.Challenge, err)
	}

	secret := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("s", 32)))
	pub, _, _ := ed25519.GenerateKey(nil)
	pubKey := base64.RawURLEncoding.EncodeToString(pub)
	noSecret := eval(fmt.Sprintf(`!document.documentElement.outerHTML.includes(%q) && [...document.querySelectorAll("input, textarea")].every(i => !i.value.includes(%q))`, secret, secret))
	if err := chromedp.Run(ctx,
		chromedp.SetValue("#jt-kid", "shop-2026", chromedp.ByQuery),
		chromedp.SetValue("#jt-alg", "HS256", chromedp.ByQuery),
		chromedp.SetValue("#jt-material", secret, chromedp.ByQuery),
		chromedp.Click(`#jointoken-form button[type=submit]`, chromedp.ByQuery),
		text("#jt-status", ev+" takes joins with or without a join token; 1 key."),
		text("#jt-keys", "shop-2026 · HS256 Remove"),
		noSecret,
		// A second key, invite only, then the first removed.
		chromedp.SetValue("#jt-kid", "ed-1", chromedp.ByQuery),
		chromedp.SetValue("#jt-alg", "EdDSA", chromedp.ByQuery),
		chromedp.SetValue("#jt-material", pubKey, chromedp.ByQuery),
		chromedp.Click("#jt-required", chromedp.ByQuery),
		chromedp.Click(`#jointoken-form button[type=submit]`, chromedp.ByQuery),
		text("#jt-status", ev+" takes joins with a join token only; 2 keys."),
		noSecret,
	); err != nil {
		t.Fatalf("adding join token keys: %v", err)
	}
	if e, err := st.sys.Store.Event(bg, ev); err != nil || e.JoinToken == nil || !e.JoinToken.Required || len(e.JoinToken.Keys) != 2 || e.JoinToken.Keys[0].Secret != secret {
		t.Fatalf("the stored join tokens %+v, %v", e.JoinToken, err)
	}
	var shot []byte
	if err := chromedp.Run(ctx,
		chromedp.Click(`#jt-keys li[data-kid="shop-2026"] button`, chromedp.ByQuery),
		chromedp.Click(`#jointoken-form button[type=submit]`, chromedp.ByQuery),
		text("#jt-status", ev+" takes joins with a join token only; 1 key."),
		text("#jt-keys", "ed-1 · EdDSA Remove"),
		noSecret,
		chromedp.FullScreenshot(&shot, 100),
	); err != nil {
		t.Fatalf("removing a key: %v", err)
	}
	saveScreenshot(t, "console-settings.png", shot)
	if e, err := st.sys.Store.Event(bg, ev); err != nil || e.JoinToken == nil || len(e.JoinToken.Keys) != 1 || e.JoinToken.Keys[0] != (queue.JoinTokenKey{Kid: "ed-1", Alg: "EdDSA", PublicKey: pubKey}) {
		t.Fatalf("after removing a key %+v, %v", e.JoinToken, err)
	}
}

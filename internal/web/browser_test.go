package web_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testdraw"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/entry"
)

// stack is the real pipeline behind the page: a broker, a Redis, a
// consumer, producer-api and a running gateway serving the page.
type stack struct {
	sys  *testsys.System
	gw   *gateway.Server
	keys *entry.Keyring
	page string // the gateway's base URL, which serves the page
	api  string // producer-api's base URL
}

// startStack starts the pipeline for t with the given admin token; the
// gateway pushes status every 100 ms and admits only on gw.MonitorTick.
// Everything stops at cleanup.
func startStack(t *testing.T, adminToken string) *stack {
	t.Helper()
	return startStackBehind(t, adminToken, nil)
}

// startStackBehind is startStack with the gateway (and so the page) served
// through wrap, when not nil: what a proxy in front does to it.
func startStackBehind(t *testing.T, adminToken string, wrap func(http.Handler) http.Handler) *stack {
	t.Helper()
	return startStackWith(t, adminToken, wrap, nil)
}

// startStackWith is startStackBehind whose gateway mails the people called
// through mailer, when not nil, its page's address their links' base.
func startStackWith(t *testing.T, adminToken string, wrap func(http.Handler) http.Handler, mailer gateway.Mailer) *stack {
	t.Helper()
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	tickets, _ := queue.NewTicketSigner("browser-test-secret")
	keys, _ := entry.DerivedKeyring("browser-test-secret", nil)
	// producer-api as shipped, over the store that records its changes:
	// the page's visitor identity names the user (the cookie without
	// Secure: the test serves plain HTTP).
	api, err := producer.New(producer.Config{AdminToken: adminToken, AllowedOrigins: []string{"127.0.0.1:*"}, CookieInsecure: true}, producer.Deps{
		Store: sys.Recorded(redisstore.Options{}, sys.Pub), Topics: sys.Pub.Admin(), Publisher: sys.Pub, Tickets: tickets, Logger: testenv.Logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	prod := httptest.NewServer(api)
	t.Cleanup(prod.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := gateway.Config{StatusInterval: 100 * time.Millisecond, AdmitInterval: time.Hour, DisconnectGrace: time.Hour, ProducerURL: prod.URL}
	deps := gateway.Deps{Store: sys.Store, Publisher: sys.Pub, Tickets: tickets, Entry: keys, Logger: testenv.Logger(t)}
	if mailer != nil {
		cfg.PublicURL, deps.Mails, deps.Mailer = "http://"+ln.Addr().String(), sys.Store, mailer
	}
	gw, err := gateway.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	gctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gw.Run(gctx)
	}()
	<-gw.Started()
	var h http.Handler = gw
	if wrap != nil {
		h = wrap(gw)
	}
	site := httptest.NewUnstartedServer(h)
	site.Listener.Close()
	site.Listener = ln
	site.Start()
	t.Cleanup(func() {
		site.Close()
		stop()
		<-done
	})
	return &stack{sys: sys, gw: gw, keys: keys, page: site.URL, api: prod.URL}
}

// TestWaitingRoomInARealBrowser drives Debian's chromium through the page
// against the real pipeline: join, see the position appear and change, get
// admitted with a valid entry token, press "done" and free the slot.
func TestWaitingRoomInARealBrowser(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	sys := st.sys

	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "ahead", 1) // someone is ahead of the browser's user

	ctx := browser(t, chrome)
	var user string
	if err := chromedp.Run(ctx,
		joinInPage(st.page+"/?event="+ev, &user),
		chromedp.WaitVisible("#line"),
		text("#position", "2"), text("#total", "2"),
		eval(nothingHiddenDrawn),
	); err != nil {
		t.Fatalf("join in the page: %v", err)
	}
	if !queue.IsVisitorID(user) {
		t.Fatalf("the page holds its place as %q, not a visitor identity", user)
	}
	sys.Leave(ev, "ahead", 2) // the position changes live
	if err := chromedp.Run(ctx, text("#position", "1"), text("#total", "1"), text("#state-text", "You are next!")); err != nil {
		t.Fatalf("position did not move: %v", err)
	}
	st.gw.MonitorTick(context.Background())
	// The event has no target: the page says in words what to do next and
	// until when; the entry token is in the page for the shop's developers,
	// collapsed, not shown to the visitor.
	var token, visible string
	var shot []byte
	if err := chromedp.Run(ctx,
		chromedp.WaitVisible("#admitted"),
		chromedp.Value("#token", &token),
		chromedp.Poll(`document.querySelector("#countdown").textContent.endsWith("s")`, nil),
		eval(`/^You are admitted: go on to the shop now, until .+\. Your slot is held for you until then\.$/.test(document.querySelector("#admitted-next").textContent)`),
		eval(`Math.abs(Date.parse(document.querySelector("#admitted-until").dateTime) - Date.now()) < 120000`),
		eval(`!document.querySelector("#token-details").open && !document.querySelector("#token").checkVisibility()`),
		chromedp.Evaluate(`document.body.innerText`, &visible),
		chromedp.FullScreenshot(&shot, 100), // 100: PNG
	); err != nil {
		t.Fatalf("admission in the page: %v", err)
	}
	if et, err := st.keys.Verify(token, ev, time.Now()); err != nil || et.UserID != user {
		t.Fatalf("the page holds token %q: %+v %v", token, et, err)
	}
	if strings.Contains(visible, token[:20]) || strings.Contains(visible, "checks it") || !strings.Contains(visible, "For the shop's developers") {
		t.Fatalf("the admitted page's visible text shows the token, or no way to it:\n%s", visible)
	}
	saveScreenshot(t, "waiting-room.png", shot)
	if err := chromedp.Run(ctx,
		chromedp.Click("#token-details summary", chromedp.ByQuery),
		eval(`document.querySelector("#token").checkVisibility()`),
	); err != nil {
		t.Fatalf("the token for the shop's developers: %v", err)
	}
	pressDone(ctx, t, sys, ev)
}

// nothingHiddenDrawn holds when no element the page hides (an event's
// absent logo, the sections not shown) is drawn, and the band's visible
// text holds no stray "•": an author display rule once beat [hidden], and
// the band showed the empty logo's padding as a white dot.
const nothingHiddenDrawn = `[...document.querySelectorAll("[hidden]")].every((e) => e.getClientRects().length === 0)
	&& document.querySelector("#logo").hidden && !document.querySelector(".band").innerText.includes("•")`

// pressDone presses "done" in the admitted page and waits until the slot of
// ev is free in the store.
func pressDone(ctx context.Context, t *testing.T, sys *testsys.System, ev string) {
	t.Helper()
	if err := chromedp.Run(ctx, chromedp.Click("#done", chromedp.ByQuery), chromedp.WaitVisible("#released")); err != nil {
		t.Fatalf("done: %v", err)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		st, err := sys.Store.EventStatus(context.Background(), ev, time.Now().UnixMilli())
		return err == nil && st.Holders == 0, fmt.Sprintf("after done: %+v %v", st, err)
	})
}

// TestDropInARealBrowser drives chromium through a ticket drop. A join
// before the pre-queue is refused and the page says when the pre-queue and
// the drop open, keeping the form. In the pre-queue the page counts down to
// the opening, says how many people are here and shows the draw's
// commitment; after the opening it shows the place the draw gave (checked
// against the documented rule, package testdraw), the revealed seed and the
// live position, and then the admission.
func TestDropInARealBrowser(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	sys := st.sys
	ctx := browser(t, chrome)

	early := testenv.EventID(t) + "-early"
	earlyOpens := time.Now().Add(time.Hour).Truncate(time.Second).UnixMilli()
	sys.CreateDrop(early, 5, 1, earlyOpens, 600)
	if err := chromedp.Run(ctx,
		chromedp.Navigate(st.page+"/?event="+early),
		chromedp.WaitVisible("#not-open"),
		datetime("#drop-opens-at", earlyOpens),
		datetime("#prequeue-opens-at", earlyOpens-600_000),
		chromedp.Poll(`/^\d+ min \d+ s$/.test(document.querySelector("#prequeue-opens-in").textContent)`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Poll(`!document.querySelector("#joining").hidden && document.querySelector("#line").hidden && !localStorage.getItem("waitq:"+new URLSearchParams(location.search).get("event"))`, nil, chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		t.Fatalf("a join before the pre-queue: %v", err)
	}

	// The drop's pre-queue is open; it opens in a few seconds. Three people
	// join before the browser's user.
	ev := testenv.EventID(t)
	opensAt := time.Now().Add(6 * time.Second).UnixMilli()
	e := sys.CreateDrop(ev, 10, 1, opensAt, 60)
	users := []string{"early-1", "early-2", "early-3", ""} // and the page's visitor
	for _, u := range users[:3] {
		sys.Join(ev, u, time.Now().UnixMilli())
	}
	// Paused through the opening, so that the gateway's tick at the opening
	// admits nobody and the page shows the drawn place first.
	setState(t, sys, e, queue.StatePaused)
	var before string
	var shot []byte
	if err := chromedp.Run(ctx,
		joinInPage(st.page+"/?event="+ev, &users[3]),
		chromedp.WaitVisible("#prequeue"),
		// All at once, before the opening: the countdown in seconds, the
		// people gathered, no position.
		chromedp.Poll(`!document.querySelector("#prequeue").hidden && /^\d+ s$/.test(document.querySelector("#opens-in").textContent) &&
			document.querySelector("#gathered").textContent === "4 people are here" && document.querySelector("#place-line").hidden &&
			document.querySelector("#state-text").textContent === "You are in the pre-queue."`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		datetime("#opens-at", opensAt),
		text("#commitment", e.Seed.Commitment()),
		chromedp.FullScreenshot(&shot, 100), // 100: PNG
		chromedp.Text("#opens-in", &before, chromedp.ByQuery),
		// It ticks in the page.
		chromedp.Poll(fmt.Sprintf(`document.querySelector("#opens-in").textContent !== %q`, before), nil, chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		t.Fatalf("the pre-queue in the page: %v", err)
	}
	saveScreenshot(t, "drop-prequeue.png", shot)

	order := testdraw.Order(t, e.Seed.Hex(), users)
	place := strconv.Itoa(slices.Index(order, users[3]) + 1)
	if err := chromedp.Run(ctx,
		chromedp.WaitVisible("#drawn"),
		text("#drawn-place", place),
		text("#position", place), text("#total", "4"),
		text("#seed", e.Seed.Hex()),
		chromedp.Poll(`document.querySelector("#prequeue").hidden && !document.querySelector("#place-line").hidden`, nil, chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		t.Fatalf("the drawn place in the page (the rule gives %s in %v): %v", place, order, err)
	}

	setState(t, sys, e, queue.StateOpen)
	st.gw.MonitorTick(context.Background()) // room for all four
	var token string
	if err := chromedp.Run(ctx, chromedp.WaitVisible("#admitted"), chromedp.Value("#token", &token)); err != nil {
		t.Fatalf("admission in the page: %v", err)
	}
	if et, err := st.keys.Verify(token, ev, time.Now()); err != nil || et.UserID != users[3] {
		t.Fatalf("the page shows token %q: %+v %v", token, et, err)
	}
}

// TestAdminPageChangesStateAndCapacity drives the admin view in chromium:
// the events table, then a pause (confirmed in the console's dialog), a
// capacity and a rate change through its form, checked in the store.
func TestAdminPageChangesStateAndCapacity(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "admin-secret")
	ev := testenv.EventID(t)
	st.sys.CreateEvent(ev, 4, 1)

	ctx := browser(t, chrome)
	row := fmt.Sprintf(`[...document.querySelectorAll("#events tbody tr")].some(r => r.cells[0].textContent === %q && r.cells[1].textContent === %%q && r.cells[4].textContent === %%q && r.cells[6].textContent === %%q)`, ev)
	if err := chromedp.Run(ctx,
		chromedp.Navigate(st.page+"/admin.html"),
		chromedp.SetValue("#admin-token", "admin-secret", chromedp.ByQuery),
		chromedp.Click(`#auth button`, chromedp.ByQuery),
		chromedp.Poll(fmt.Sprintf(row, "open", "4", "no limit"), nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.SetValue("#cap-event", ev, chromedp.ByQuery),
		chromedp.SetValue("#cap-value", "7", chromedp.ByQuery),
		chromedp.SetValue("#cap-rate", "120", chromedp.ByQuery),
		chromedp.SetValue("#cap-state", "paused", chromedp.ByQuery),
		chromedp.Click(`#capacity-form button`, chromedp.ByQuery),
		// Pausing asks first, saying what will happen.
		chromedp.WaitVisible("#confirm"),
		text("#confirm-title", "Pause "+ev+"?"),
		text("#confirm-text", "Nobody in the line of "+ev+" is admitted until it is resumed; people keep joining and keep their places. 0 are waiting now."),
		chromedp.Click("#confirm-ok", chromedp.ByQuery),
		chromedp.Poll(fmt.Sprintf(`document.querySelector("#cap-status").textContent === %q`, ev+" is now paused with capacity 7, 120 admissions a minute."), nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Poll(fmt.Sprintf(row, "paused", "7", "120"), nil, chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		t.Fatalf("admin page: %v", err)
	}
	if e, err := st.sys.Store.Event(context.Background(), ev); err != nil || e.State != queue.StatePaused || e.Capacity != 7 || e.AdmitPerMinute != 120 {
		t.Fatalf("after the form: %+v %v", e, err)
	}
}

// TestAdminPageSchedulesADrop schedules a new event as a drop through the
// admin view's form (the opening as a local date and time) and checks the
// store's schedule and the commitment the page shows, in the form's answer
// and in the events table.
func TestAdminPageSchedulesADrop(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "admin-secret")
	ev := testenv.EventID(t)
	opensAt := time.Now().Add(time.Hour).Truncate(time.Second).UnixMilli()

	ctx := browser(t, chrome)
	var local, commitment string
	if err := chromedp.Run(ctx,
		chromedp.Navigate(st.page+"/admin.html"),
		chromedp.SetValue("#admin-token", "admin-secret", chromedp.ByQuery),
		chromedp.Click(`#auth button`, chromedp.ByQuery),
		chromedp.WaitVisible("#schedule-form"),
		chromedp.SetValue("#sch-event", ev, chromedp.ByQuery),
		chromedp.SetValue("#sch-capacity", "5", chromedp.ByQuery),
		// The opening in the browser's local time, as a person types it.
		chromedp.Evaluate(fmt.Sprintf(`(() => {
			const d = new Date(%d);
			d.setMinutes(d.getMinutes() - d.getTimezoneOffset());
			const input = document.querySelector("#sch-opens");
			input.value = d.toISOString().slice(0, 19);
			return input.value;
		})()`, opensAt), &local),
		chromedp.SetValue("#sch-prequeue", "600", chromedp.ByQuery),
		chromedp.Click(`#schedule-form button[type=submit]`, chromedp.ByQuery),
		// Scheduling asks first, saying when joins are refused and when
		// the drop opens.
		chromedp.WaitVisible("#confirm"),
		text("#confirm-title", "Schedule "+ev+"?"),
		eval(`document.querySelector("#confirm-text").textContent.startsWith("`+ev+` is created as a drop: joins are refused until its pre-queue opens at ")`),
		chromedp.Click("#confirm-ok", chromedp.ByQuery),
		chromedp.WaitVisible("#sch-commitment"),
		chromedp.Text("#sch-commitment", &commitment, chromedp.ByQuery),
	); err != nil {
		t.Fatalf("schedule in the admin page (opening %q): %v", local, err)
	}
	e, err := st.sys.Store.Event(context.Background(), ev)
	if err != nil || e.OpensAt != opensAt || e.PrequeueSeconds != 600 || e.ClosesAt != 0 || e.Capacity != 5 || e.Seed == nil || commitment != e.Seed.Commitment() {
		t.Fatalf("after the form (opening %q): %+v %v; the page shows commitment %q", local, e, err, commitment)
	}
	row := fmt.Sprintf(`[...document.querySelectorAll("#events tbody tr")].some(r => r.cells[0].textContent === %q && r.cells[7].textContent === "scheduled" &&
		r.querySelector(".commitment")?.textContent === %q && r.querySelector(".prequeue-size")?.textContent === "0 in the pre-queue")`, ev, commitment)
	if err := chromedp.Run(ctx, chromedp.Poll(row, nil, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the events table: %v", err)
	}
}

// setState stores e with state, as an operator's change would.
func setState(t *testing.T, sys *testsys.System, e queue.Event, state queue.EventState) {
	t.Helper()
	e.State = state
	if _, err := sys.Store.PutEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// TestAdminPageAdaptiveAdmission drives the admin view's admission panel
// and adaptive form in chromium: a fixed-rate event, adaptive admission
// turned on through the form (the controller not started yet), the guard
// settings with the report token, the controller's first steps (stopped
// for want of reports, then a report posted with the page's token brings
// it back), the reporter and the last step's figures, a setting the API
// refuses, adaptive admission turned off, and the token replaced.
func TestAdminPageAdaptiveAdmission(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "admin-secret")
	ev := testenv.EventID(t)
	st.sys.CreateEvent(ev, 4, 1)
	bg := context.Background()

	ctx := browser(t, chrome)
	// Accept the confirmation the token's replacement asks for.
	chromedp.ListenTarget(ctx, func(e any) {
		if _, ok := e.(*page.EventJavascriptDialogOpening); ok {
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) }()
		}
	})
	panel := fmt.Sprintf(`.admission-panel[data-event=%q]`, ev)
	// inPanel waits until the JS expression cond, over the panel p, holds.
	inPanel := func(cond string) chromedp.Action {
		return chromedp.Poll(fmt.Sprintf(`(() => { const p = document.querySelector(%q); const q = (s) => p.querySelector(s)?.textContent; return !!p && (%s); })()`, panel, cond),
			nil, chromedp.WithPollingTimeout(20*time.Second))
	}
	if err := chromedp.Run(ctx,
		chromedp.Navigate(st.page+"/admin.html"),
		chromedp.SetValue("#admin-token", "admin-secret", chromedp.ByQuery),
		chromedp.Click(`#auth button`, chromedp.ByQuery),
		inPanel(`q(".mode") === "fixed rate" && q(".fixed") === "Fixed rate: no rate limit; capacity alone holds." && q(".no-reports") !== undefined`),
	); err != nil {
		t.Fatalf("the panel of a fixed-rate event: %v", err)
	}

	// On through the form, from the panel's button: a ceiling and a target.
	if err := chromedp.Run(ctx,
		chromedp.Click(panel+" .edit-adaptive", chromedp.ByQuery),
		chromedp.Poll(fmt.Sprintf(`document.querySelector("#ad-event").value === %q`, ev), nil, chromedp.WithPollingTimeout(5*time.Second)),
		chromedp.SetValue("#ad-ceiling", "600", chromedp.ByQuery),
		chromedp.SetValue("#ad-target", "500", chromedp.ByQuery),
		chromedp.Click("#ad-save", chromedp.ByQuery),
		text("#ad-status", ev+" admits adaptively: target p95 500 ms, between 0 and 600 a minute, starting at 60."),
		inPanel(`q(".mode") === "adaptive" && q(".ceiling") === "600" && q(".floor") === "0" &&
			q(".not-started") === "Controller not started yet: no admission step has run. The slot monitor (ws-gateway) starts it at 60 a minute." &&
			q(".signal") === "no health report yet"`),
		chromedp.Poll(fmt.Sprintf(`[...document.querySelectorAll("#events tbody tr")].some(r => r.cells[0].textContent === %q && r.cells[6].textContent === "adaptive up to 600")`, ev), nil, chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		t.Fatalf("adaptive admission on: %v", err)
	}
	e, err := st.sys.Store.Event(bg, ev)
	if err != nil || e.AdmitPerMinute != 600 || e.Adaptive == nil || e.Adaptive.TargetLatencyMs != 500 || e.Adaptive.DecreaseFactor != queue.DefaultDecreaseFactor {
		t.Fatalf("after the form: %+v %+v %v", e, e.Adaptive, err)
	}

	// The guard's settings, with the token the page shows.
	var token, env string
	if err := chromedp.Run(ctx,
		chromedp.Click(panel+" details.guard summary", chromedp.ByQuery),
		chromedp.WaitVisible(panel+" .report-token", chromedp.ByQuery),
		chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).textContent`, panel+" .report-token"), &token),
		chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).textContent`, panel+" .guard-env"), &env),
	); err != nil {
		t.Fatalf("guard settings: %v", err)
	}
	if token != e.ReportToken {
		t.Fatalf("the page shows report token %q, the event has %q", token, e.ReportToken)
	}
	if want := "WAITQ_EVENT_ID=" + ev + "\nWAITQ_HEALTH_URL=" + st.api + "\nWAITQ_HEALTH_TOKEN=" + token; env != want {
		t.Fatalf("guard settings %q, want %q", env, want)
	}

	// The first admission step starts the controller; with no report, the
	// signal is lost and admission stops.
	st.gw.MonitorTick(bg)
	if err := chromedp.Run(ctx,
		inPanel(`q(".effective") === "0" && q(".signal") === "lost: admission stopped; no health report yet" && q(".reason") === "no_signal" &&
			q(".counters") === "0 increases, 0 decreases, 1 stop for want of reports" && p.querySelectorAll(".changes tbody tr").length === 2`),
	); err != nil {
		t.Fatalf("the controller stopped for want of reports: %v", err)
	}

	// A guard reports with the token from the page; the next step resumes.
	postHealth(t, st.api, ev, token, `{"reporter":"guard-1","windowMs":10000,"requests":100,"p95Ms":120,"errorRate":0.01}`, http.StatusNoContent)
	if err := chromedp.Run(ctx,
		inPanel(`(() => { const r = p.querySelector(".reporters tbody tr[data-reporter='guard-1']"); return !!r &&
			[...r.cells].slice(2).map(c => c.textContent).join("|") === "10.0 s|100|120 ms|1.0 %|–" && /^(just now|\d+ s ago)$/.test(r.cells[1].textContent); })()`),
	); err != nil {
		t.Fatalf("the reporter in the panel: %v", err)
	}
	st.gw.MonitorTick(bg)
	var shot []byte
	if err := chromedp.Run(ctx,
		inPanel(`q(".effective") === "60" && q(".reason") === "signal_back" && q(".phase").startsWith("start") &&
			q(".last-step").startsWith("p95 120 ms (target 500 ms): withinerrors 1.0 % (max 5.0 %): withinload: not reported") &&
			/^newest report (just now|\d+ s ago)$/.test(q(".signal")) && p.querySelectorAll(".changes tbody tr").length === 3 &&
			p.querySelector(".changes tbody tr").cells[1].textContent === "0 → 60" &&
			p.querySelector("svg.sparkline")?.getAttribute("aria-label") === "Effective rate over the last 3 changes: from 0 to 60 a minute, lowest 0, highest 60; ceiling 600, floor 0."`),
		chromedp.FullScreenshot(&shot, 100), // 100: PNG
	); err != nil {
		t.Fatalf("the controller back with the report: %v", err)
	}
	saveScreenshot(t, "admin-adaptive.png", shot)

	// A setting the API refuses: its message next to the form.
	if err := chromedp.Run(ctx,
		chromedp.Click(panel+" .edit-adaptive", chromedp.ByQuery),
		chromedp.Poll(`document.querySelector("#ad-target").value === "500" && document.querySelector("#ad-decrease").value === "0.7"`, nil, chromedp.WithPollingTimeout(5*time.Second)),
		chromedp.SetValue("#ad-decrease", "2", chromedp.ByQuery),
		chromedp.Click("#ad-save", chromedp.ByQuery),
		text("#ad-status", "adaptive.decreaseFactor must be between 0.1 and 0.95"),
	); err != nil {
		t.Fatalf("a refused setting: %v", err)
	}
	if e, err := st.sys.Store.Event(bg, ev); err != nil || e.Adaptive == nil || e.Adaptive.DecreaseFactor != queue.DefaultDecreaseFactor {
		t.Fatalf("after a refused setting: %+v %v", e.Adaptive, err)
	}

	// Off: a fixed rate at the former ceiling; the reporter stays listed.
	if err := chromedp.Run(ctx,
		chromedp.Click("#ad-off", chromedp.ByQuery),
		text("#ad-status", ev+" admits at a fixed rate again: 600 a minute."),
		inPanel(`q(".mode") === "fixed rate" && q(".fixed") === "Fixed rate: 600 admitted a minute, whatever the shop's health." &&
			p.querySelector(".reporters tbody tr[data-reporter='guard-1']") !== null`),
	); err != nil {
		t.Fatalf("adaptive admission off: %v", err)
	}
	if e, err := st.sys.Store.Event(bg, ev); err != nil || e.Adaptive != nil || e.AdmitPerMinute != 600 {
		t.Fatalf("after turning off: %+v %v", e, err)
	}

	// A new report token: the page shows it, the old one is refused.
	var fresh string
	if err := chromedp.Run(ctx,
		chromedp.Click(panel+" .rotate-token", chromedp.ByQuery),
		inPanel(`q(".guard-status") === "The report token was replaced: give the guards the new one." && q(".report-token") !== `+strconv.Quote(token)),
		chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).textContent`, panel+" .report-token"), &fresh),
	); err != nil {
		t.Fatalf("replacing the report token: %v", err)
	}
	if e, err := st.sys.Store.Event(bg, ev); err != nil || e.ReportToken != fresh {
		t.Fatalf("the page shows report token %q, the event has %q (%v)", fresh, e.ReportToken, err)
	}
	postHealth(t, st.api, ev, token, `{"reporter":"guard-1","requests":0}`, http.StatusUnauthorized)
	postHealth(t, st.api, ev, fresh, `{"reporter":"guard-1","requests":0}`, http.StatusNoContent)
}

// postHealth posts a health report of ev to producer-api at api with the
// bearer token, and checks the answer's status.
func postHealth(t *testing.T, api, ev, token, body string, want int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, api+"/v1/admin/events/"+ev+"/health", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != want {
		t.Fatalf("health report: %d %s, want %d", res.StatusCode, b, want)
	}
}

// chromium returns the path of Debian's chromium, or marks the test
// unavailable (a failure with CI=true).
func chromium(t *testing.T) string {
	t.Helper()
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		testenv.Unavailable(t, "chromium not on PATH (apt-get install -y chromium)")
	}
	return chrome
}

// browser starts a headless chromium of the size of a phone for the test,
// with the extra options, closed at cleanup; its context ends after three
// minutes (a bound for a loaded machine under -race, not a pace).
func browser(t *testing.T, chrome string, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	profile, err := os.MkdirTemp("", "waitq-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(profile), chromedp.WindowSize(390, 844))
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancel()
		cancelCtx()
		cancelAlloc()
		// Chromium's helper processes may still be writing the profile for
		// a moment after the browser exits.
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("profile %s left behind", profile)
	})
	return ctx
}

// datetime waits until the <time> element sel says unix ms t.
func datetime(sel string, t int64) chromedp.Action {
	iso := time.UnixMilli(t).UTC().Format("2006-01-02T15:04:05.000Z")
	return chromedp.Poll(fmt.Sprintf(`document.querySelector(%q).dateTime === %q`, sel, iso), nil, chromedp.WithPollingTimeout(20*time.Second))
}

// text waits until the element sel shows want.
func text(sel, want string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`document.querySelector(%q).textContent === %q`, sel, want), nil, chromedp.WithPollingTimeout(20*time.Second))
}

// saveScreenshot keeps a screenshot of the page as artifacts/<name>.
func saveScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	dir, _ := filepath.Abs("../../artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// joinInPage opens the waiting room at url, which joins by itself (no
// typing, no click), and reads the user id its place is held by: the
// visitor identity producer-api issued to this browser.
func joinInPage(url string, user *string) chromedp.Tasks {
	return chromedp.Tasks{chromedp.Navigate(url), placeUser(user)}
}

// placeUser waits until the page holds a place in the event of its address
// and reads the place's user id from the page's storage.
func placeUser(user *string) chromedp.Tasks {
	const js = `(() => {
		const ev = new URLSearchParams(location.search).get("event");
		const s = JSON.parse(localStorage.getItem("waitq:" + ev) || "null");
		return s ? s.user : "";
	})()`
	return chromedp.Tasks{
		chromedp.Poll(js, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(js, user),
	}
}

// testShopToken is the shop token of guardedShop's events: the demo shop's
// credential for its sales.
const testShopToken = "web-test-shop-token-0123456789ab"

// guardedShop puts the shop at originURL behind waitq-guard for a new event
// ev of capacity (its done path /order; forwardToken: WAITQ_FORWARD_TOKEN),
// and makes the guard's address the event's target: the address buyers use.
func guardedShop(t *testing.T, st *stack, ev, originURL string, capacity int, forwardToken bool) (*httptest.Server, *guard.Proxy) {
	t.Helper()
	ctx := context.Background()
	shop := httptest.NewUnstartedServer(nil) // its URL is the event's target
	keys := entry.NewKeySource(entry.KeySourceConfig{URL: st.page + "/.well-known/jwks.json"})
	g, err := guard.New(guard.Config{
		OriginURL: originURL, EventID: ev, WaitingRoomURL: st.page + "/", GatewayURL: st.page,
		DonePath: "/order", CookieInsecure: true, ForwardToken: forwardToken,
	}, guard.Deps{Keys: keys, Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	shop.Config.Handler = g
	shop.Start()
	t.Cleanup(func() { shop.Close(); g.Wait() })
	st.sys.CreateEvent(ev, capacity, 1)
	e, err := st.sys.Store.Event(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	e.TargetURL, e.ShopToken = shop.URL+"/", testShopToken
	if _, err := st.sys.Store.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	return shop, g
}

// TestShopThroughTheGuardInARealBrowser walks the path a buyer walks, in
// chromium: the demo shop's product page through waitq-guard sends them to
// the waiting room, which shows their position, admits them and sends them
// back to the same product page, with the entry cookie set and the token
// gone from the address; placing the order releases the slot (seen in
// Redis) and the next in line is admitted.
func TestShopThroughTheGuardInARealBrowser(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	sys := st.sys
	ctx := context.Background()

	origin := httptest.NewServer(demoshop.Handler())
	t.Cleanup(origin.Close)
	ev := testenv.EventID(t)
	shop, g := guardedShop(t, st, ev, origin.URL, 1, false)

	bctx := browser(t, chrome)
	product := shop.URL + "/product/1"
	var room, buyer string
	if err := chromedp.Run(bctx,
		chromedp.Navigate(product),
		chromedp.WaitVisible("#line"),
		chromedp.Location(&room),
		placeUser(&buyer),
		text("#position", "1"),
	); err != nil {
		t.Fatalf("the product page through the guard, joined with no typing and no click: %v", err)
	}
	if want := st.page + "/?event=" + ev + "&returnTo=" + url.QueryEscape(product); room != want {
		t.Fatalf("sent to %q, want the waiting room %q", room, want)
	}
	sys.Join(ev, "next", time.Now().UnixMilli()) // someone behind the buyer
	testenv.Eventually(t, 10*time.Second, func() (bool, string) { return len(sys.Waiting(ev)) == 2, "next is not in line yet" })

	st.gw.MonitorTick(ctx)
	var back, heading string
	if err := chromedp.Run(bctx,
		chromedp.WaitVisible("form[action='/order']"),
		chromedp.Location(&back),
		chromedp.Text("h1", &heading),
	); err != nil {
		t.Fatalf("back in the shop: %v", err)
	}
	if back != product || heading == "" {
		t.Fatalf("after admission the browser is on %q (%q), want %q without the token", back, heading, product)
	}
	var cookies []*network.Cookie
	if err := chromedp.Run(bctx, chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		cookies, err = network.GetCookies().WithURLs([]string{shop.URL}).Do(ctx)
		return err
	})); err != nil {
		t.Fatal(err)
	}
	var entryCookie *network.Cookie
	for _, c := range cookies {
		if c.Name == g.Guard().CookieName() {
			entryCookie = c
		}
	}
	if entryCookie == nil || !entryCookie.HTTPOnly || entryCookie.SameSite != network.CookieSameSiteLax {
		t.Fatalf("entry cookie %+v, want it HttpOnly and SameSite=Lax", entryCookie)
	}
	if tk, err := st.keys.Verify(entryCookie.Value, ev, time.Now()); err != nil || tk.UserID != buyer {
		t.Fatalf("the cookie holds %+v, %v", tk, err)
	}

	// Placing the order releases the slot; the next in line gets it.
	// Submitted after the evaluation returns: a click that navigates can
	// fail the click's own call.
	submit := `setTimeout(() => document.querySelector("form[action='/order']").requestSubmit(), 0)`
	if err := chromedp.Run(bctx, chromedp.Evaluate(submit, nil)); err != nil {
		t.Fatalf("order: %v", err)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		// A read that meets the navigation fails; the next one reads the
		// new page.
		var h string
		err := chromedp.Run(bctx, chromedp.Text("h1", &h, chromedp.ByQuery))
		return err == nil && h == "Order placed", fmt.Sprintf("heading %q, %v", h, err)
	})
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		holders, _ := sys.Store.Client().ZRange(ctx, redisstore.HoldersKey(ev), 0, -1).Result()
		return len(holders) == 0, fmt.Sprintf("holders after the order %v", holders)
	})
	st.gw.MonitorTick(ctx)
	holders, _ := sys.Store.Client().ZRange(ctx, redisstore.HoldersKey(ev), 0, -1).Result()
	if len(holders) != 1 || holders[0] != "next" {
		t.Fatalf("holders %v, want the next in line", holders)
	}
}

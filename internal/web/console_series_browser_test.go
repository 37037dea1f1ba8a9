package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestConsoleDrawsTheSeriesOfARunningSale: the console opened on a sale
// that has run for minutes draws its last half hour from the admin API's
// series (the slot monitor's samples: earlier periods, then the gateway's
// tick now), before its own reads add to it; the shop's error share
// against the limit and the effective rate are charted too.
func TestConsoleDrawsTheSeriesOfARunningSale(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "admin-secret")
	ev := testenv.EventID(t)
	e := st.sys.CreateEvent(ev, 2, 1)
	a := queue.Adaptive{TargetLatencyMs: 400}.WithDefaults(600)
	e.Adaptive, e.AdmitPerMinute = &a, 600
	bg := context.Background()
	if _, err := st.sys.Store.PutEvent(bg, e); err != nil {
		t.Fatal(err)
	}
	// The sale so far: joins arriving, the slot monitor sampling a period
	// at a time, the shop reporting 2 % errors.
	now := time.Now().UnixMilli()
	for i := range 6 {
		at := now - int64(6-i)*60_000
		if _, err := st.sys.Store.Ingest(bg, []queue.Message{queue.NewMessage(queue.OpJoin, ev, fmt.Sprintf("buyer-%d", i), at)}, at); err != nil {
			t.Fatal(err)
		}
		if err := st.sys.Store.SampleSeries(bg, []string{ev}, at); err != nil {
			t.Fatal(err)
		}
	}
	postHealth(t, st.api, ev, "admin-secret", `{"reporter":"shop","windowMs":10000,"requests":100,"p95Ms":180,"errorRate":0.02}`, http.StatusNoContent)
	st.gw.MonitorTick(bg) // admits two, starts the controller, samples this period
	series, err := st.sys.Store.Series(bg, ev, time.Now().UnixMilli())
	if err != nil || len(series) != 7 {
		t.Fatalf("the series before the console opens: %d samples, %v", len(series), err)
	}
	ctx := browser(t, chrome)
	if err := chromedp.Run(ctx,
		size(1440, 1000),
		signIn(st.page, "admin-secret"),
		eval(fmt.Sprintf(`document.querySelector("#view-event").value === %q`, ev)),
		// Six minutes of samples, the line growing from 1 to 6, then 4
		// waiting once two were admitted.
		chartNow("waiting", `Number(f.dataset.sampled) === 7 && points >= 8 && n.waiting === 4`),
		eval(`document.querySelector('figure[data-chart=waiting] svg polyline').getAttribute("points").split(" ").length >= 8`),
		eval(`/over the last [67] min/.test(document.querySelector('figure[data-chart=waiting] svg').getAttribute("aria-label"))`),
		chartNow("holders", `n.holders === 2 && n.capacity === 2`),
		chartNow("errors", `Math.abs(n.errors - 0.02) < 1e-9 && n.maxErrors === 0.05`),
		eval(`document.querySelector('figure[data-chart=errors] svg').getAttribute("aria-label").startsWith("Shop's error share against the limit: now errors 2%, limit 5%")`),
		chartNow("rate", `n.rate > 0`),
		chartNow("p95", `n.p95 === 180 && n.target === 400`),
	); err != nil {
		t.Fatalf("the console's charts of the series: %v", err)
	}
}

// TestConsoleAsksBeforeScheduleCloseAndDelete: scheduling, closing and
// deleting each ask in the console's dialog, saying what will happen;
// cancelled, nothing changes; confirmed, it is done.
func TestConsoleAsksBeforeScheduleCloseAndDelete(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "admin-secret")
	ev := testenv.EventID(t)
	st.sys.CreateEvent(ev, 3, 1)
	bg := context.Background()
	ctx := browser(t, chrome)
	opensAt := time.Now().Add(2 * time.Hour).Truncate(time.Second).UnixMilli()
	if err := chromedp.Run(ctx,
		size(1280, 1000),
		signIn(st.page, "admin-secret"),
		chromedp.SetValue("#sch-event", ev, chromedp.ByQuery),
		chromedp.Evaluate(fmt.Sprintf(`(() => { const d = new Date(%d); d.setMinutes(d.getMinutes() - d.getTimezoneOffset());
			document.querySelector("#sch-opens").value = d.toISOString().slice(0, 19); return 0; })()`, opensAt), nil),
		chromedp.Click(`#schedule-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible("#confirm"),
		text("#confirm-title", "Schedule "+ev+"?"),
		eval(`document.querySelector("#confirm-text").textContent.startsWith("`+ev+` becomes a drop: new joins are refused until its pre-queue opens at ")`),
		text("#confirm-ok", "Schedule the drop"),
		chromedp.Click("#confirm-cancel", chromedp.ByQuery),
		text("#sch-status", "Nothing changed: "+ev+" keeps its schedule."),
	); err != nil {
		t.Fatalf("a schedule, cancelled: %v", err)
	}
	if e, err := st.sys.Store.Event(bg, ev); err != nil || e.OpensAt != 0 {
		t.Fatalf("after a cancelled schedule: %+v %v", e, err)
	}
	if err := chromedp.Run(ctx,
		chromedp.SetValue("#cap-event", ev, chromedp.ByQuery),
		chromedp.SetValue("#cap-state", "closed", chromedp.ByQuery),
		chromedp.Click(`#capacity-form button`, chromedp.ByQuery),
		chromedp.WaitVisible("#confirm"),
		text("#confirm-title", "Close "+ev+"?"),
		text("#confirm-text", ev+" takes no new joins from now on; the 0 already in line are still admitted."),
		chromedp.Click("#confirm-ok", chromedp.ByQuery),
		eval(`document.querySelector("#cap-status").textContent.startsWith("`+ev+` is now closed")`),
	); err != nil {
		t.Fatalf("a close, confirmed: %v", err)
	}
	if e, err := st.sys.Store.Event(bg, ev); err != nil || e.State != queue.StateClosed {
		t.Fatalf("after a confirmed close: %+v %v", e, err)
	}
	deleteAsks := chromedp.Tasks{
		chromedp.SetValue("#del-event", ev, chromedp.ByQuery),
		chromedp.Click(`#delete-form button`, chromedp.ByQuery),
		chromedp.WaitVisible("#confirm"),
		text("#confirm-title", "Delete "+ev+"?"),
		text("#confirm-text", ev+", its line of 0, its figures, its series and its Kafka log are deleted for good; its page stops working. This cannot be undone."),
	}
	if err := chromedp.Run(ctx, deleteAsks,
		chromedp.Click("#confirm-cancel", chromedp.ByQuery),
		text("#del-status", "Nothing changed: "+ev+" is kept."),
	); err != nil {
		t.Fatalf("a delete, cancelled: %v", err)
	}
	if _, err := st.sys.Store.Event(bg, ev); err != nil {
		t.Fatalf("a cancelled delete deleted: %v", err)
	}
	if err := chromedp.Run(ctx, deleteAsks,
		chromedp.Click("#confirm-ok", chromedp.ByQuery),
		text("#del-status", ev+" is deleted."),
	); err != nil {
		t.Fatalf("a delete, confirmed: %v", err)
	}
	if _, err := st.sys.Store.Event(bg, ev); !errors.Is(err, queue.ErrEventNotFound) {
		t.Fatalf("after a confirmed delete: %v", err)
	}
}

// TestConsoleInKorean: ?lang=ko gives the console in Korean, <html
// lang="ko">, its charts' titles and text alternatives and its
// confirmations too, with the language switch offering the three.
func TestConsoleInKorean(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "admin-secret")
	ev := testenv.EventID(t)
	st.sys.CreateEvent(ev, 2, 1)
	ctx := browser(t, chrome)
	if err := chromedp.Run(ctx,
		size(1280, 1000),
		chromedp.Navigate(st.page+"/admin.html?lang=ko"),
		eval(`document.documentElement.lang === "ko" && document.title === "waitq — 콘솔"`),
		text("h1", "waitq 콘솔"),
		text(`label[for="admin-token"]`, "관리자 토큰 (이 탭에만 보관됩니다)"),
		eval(`[...document.querySelectorAll("#lang option")].map(o => o.value + ":" + o.textContent).join() === "en:English,ko:한국어,ja:日本語"`),
		chromedp.SetValue("#admin-token", "admin-secret", chromedp.ByQuery),
		chromedp.Click(`#auth button`, chromedp.ByQuery),
		chromedp.WaitVisible("#event-view"),
		text("#view-title", "판매 현황 (실시간)"),
		text(`#chart-waiting-title`, "대기열 길이"),
		eval(`document.querySelector('figure[data-chart=waiting] svg').getAttribute("aria-label").startsWith("대기열 길이: 현재 대기 인원 0")`),
		text(`#events thead th:nth-child(3)`, "대기"),
		text("#view-door", "입구: 챌린지 없음; 발급 0, 풀이 0, 거부 0; 초당 참여 0.0; 참여 토큰 없음."),
		text(fmt.Sprintf(`section.admission-panel[data-event=%q] .mode`, ev), "고정 속도"),
		text(fmt.Sprintf(`section.admission-panel[data-event=%q] .fixed`, ev), "고정 속도: 속도 제한 없음. 수용 인원만 적용됩니다."),
		chromedp.SetValue("#cap-event", ev, chromedp.ByQuery),
		chromedp.SetValue("#cap-state", "paused", chromedp.ByQuery),
		chromedp.Click(`#capacity-form button`, chromedp.ByQuery),
		chromedp.WaitVisible("#confirm"),
		text("#confirm-title", ev+"을(를) 일시 중지할까요?"),
		text("#confirm-ok", "판매 일시 중지"),
		text("#confirm-cancel", "취소"),
		chromedp.Click("#confirm-cancel", chromedp.ByQuery),
		text("#cap-status", "변경하지 않았습니다: "+ev+"은(는) 그대로입니다."),
	); err != nil {
		t.Fatalf("the console in Korean: %v", err)
	}
}

package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// notInTheLanguage is a JS expression listing the words of the console
// (its text nodes, shown or hidden, and its placeholders, labels and
// titles) that are not in its language: every run of two or more ASCII
// letters, once the values of asIs (event ids, user-entered names),
// template placeholders, URLs and colours are taken out, that is not in
// allowed (technical identifiers, units, names). Text marked
// translate="no" (event ids, reason codes, user-entered names) and code is
// skipped.
func notInTheLanguage(asIs []string, allowed ...string) string {
	idList, _ := json.Marshal(asIs)
	words, _ := json.Marshal(allowed)
	return fmt.Sprintf(`(() => {
		const ids = %s, allowed = new Set(%s), bad = [];
		const skip = (e) => !e || e.closest('[translate="no"], code, pre, script, style');
		const where = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (typeof e.className === "string" && e.className ? "." + e.className.split(" ")[0] : "");
		const check = (text, at) => {
			let t = text;
			for (const id of ids) t = t.split(id).join(" ");
			t = t.replace(/\{\{\w+\}\}/g, " ").replace(/https?:\/\/\S+/g, " ").replace(/#[0-9a-fA-F]{6}\b/g, " ");
			for (const m of t.matchAll(/[A-Za-z][A-Za-z0-9_.+-]*/g)) {
				const w = m[0].replace(/[.+-]+$/, "");
				if ((w.match(/[A-Za-z]/g) || []).length >= 2 && !allowed.has(w)) bad.push(w + " in " + at + ": " + text.trim().slice(0, 160));
			}
		};
		const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			if (n.textContent.trim() && !skip(n.parentElement)) check(n.textContent, where(n.parentElement));
		}
		for (const e of document.body.querySelectorAll("[placeholder], [aria-label], [title], [alt]")) {
			if (skip(e)) continue;
			for (const a of ["placeholder", "aria-label", "title", "alt"]) if (e.hasAttribute(a)) check(e.getAttribute(a), where(e) + "@" + a);
		}
		check(document.title, "title");
		return bad;
	})()`, idList, words)
}

// consoleIdentifiers are the words the console shows as they are in every
// language: names of programs and settings, protocols, algorithms, error
// codes of the API, language codes and units.
var consoleIdentifiers = []string{
	"waitq", "waitq-guard", "ws-gateway", "producer-api", "WAITQ_HEALTH_URL", "Kafka", "PoW", "ID",
	"URL", "https", "rrggbb", "en", "ko", "ja", "ms", "kid", "HS256", "EdDSA", "Ed25519", "base64url",
	"event_not_open", "slots_in_use", "Ctrl+C",
}

// TestConsoleSpeaksOnlyKorean opens the console with ?lang=ko on a fixed
// rate event (a challenge, a join token key, a branded page, saved through
// the console), an adaptive event whose shop reports its health (the
// controller's facts, its changes, the sparkline, the reporters) and a
// scheduled drop (its schedule and draw), with the guard settings open,
// and finds no word of English left in the page (outside event ids,
// figures, user-entered values and technical identifiers), before and
// after the forms' answers.
func TestConsoleSpeaksOnlyKorean(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "admin-secret")
	base := testenv.EventID(t)
	fixed, adaptive, drop := base+"-fixed", base+"-adaptive", base+"-drop"
	const kid = "shop-1" // a join token key's id, typed in
	asIs := []string{fixed, adaptive, drop, kid}
	bg := context.Background()
	st.sys.CreateEvent(fixed, 2, 1)
	for i := range 3 {
		st.sys.Join(fixed, fmt.Sprintf("buyer-%d", i), time.Now().UnixMilli())
	}
	e := st.sys.CreateEvent(adaptive, 2, 1)
	a := queue.Adaptive{TargetLatencyMs: 400}.WithDefaults(600)
	e.Adaptive, e.AdmitPerMinute = &a, 600
	if _, err := st.sys.Store.PutEvent(bg, e); err != nil {
		t.Fatal(err)
	}
	st.sys.CreateDrop(drop, 5, 1, time.Now().Add(time.Hour).Truncate(time.Second).UnixMilli(), 600)
	postHealth(t, st.api, adaptive, "admin-secret", `{"reporter":"shop","windowMs":10000,"requests":50,"p95Ms":250,"errorRate":0.01}`, http.StatusNoContent)
	st.gw.MonitorTick(bg) // starts the controller with the report

	ctx := browser(t, chrome)
	chooseEvent := func(id string) chromedp.Action {
		return chromedp.Evaluate(fmt.Sprintf(`(() => { const s = document.querySelector("#view-event"); s.value = %q; s.dispatchEvent(new Event("change")); return 0; })()`, id), nil)
	}
	panel := func(id string) string { return fmt.Sprintf(`section.admission-panel[data-event=%q]`, id) }
	english := func(when string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var bad []string
			if err := chromedp.Evaluate(notInTheLanguage(asIs, consoleIdentifiers...), &bad).Do(ctx); err != nil {
				return err
			}
			if len(bad) > 0 {
				t.Errorf("%s, the Korean console still shows English:\n%s", when, strings.Join(bad, "\n"))
			}
			return nil
		})
	}
	secret := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	if err := chromedp.Run(ctx,
		size(1440, 1000),
		chromedp.Navigate(st.page+"/admin.html?lang=ko"),
		eval(`document.documentElement.lang === "ko"`),
		english("before signing in"),
		chromedp.SetValue("#admin-token", "admin-secret", chromedp.ByQuery),
		chromedp.Click(`#auth button`, chromedp.ByQuery),
		chromedp.WaitVisible("#event-view"),
		chromedp.WaitVisible(panel(drop), chromedp.ByQuery),
		eval(fmt.Sprintf(`document.querySelector(%q) !== null`, panel(adaptive)+" .changes tbody tr")),
		chooseEvent(fixed),
		eval(fmt.Sprintf(`document.querySelector("#pg-event").value === %q`, fixed)),
		// The forms' answers, in Korean.
		chromedp.SetValue("#pg-title", "봄 한정 판매", chromedp.ByQuery),
		chromedp.Click(`#page-form button`, chromedp.ByQuery),
		text("#pg-status", `이제 `+fixed+` 대기실에 "봄 한정 판매"이(가) 표시됩니다.`),
		chromedp.SetValue("#ch-mode", "fixed", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#ch-mode").dispatchEvent(new Event("change")); 0`, nil),
		chromedp.SetValue("#ch-difficulty", "8", chromedp.ByQuery),
		chromedp.Click(`#challenge-form button`, chromedp.ByQuery),
		text("#ch-status", fixed+"은(는) 모든 참여에 8비트 챌린지를 요구합니다."),
		eval(`document.querySelector("#view-door").textContent.startsWith("입구: 고정, 현재 8비트; 발급 0, 풀이 0, 거부 0")`),
		chromedp.SetValue("#jt-kid", kid, chromedp.ByQuery),
		chromedp.SetValue("#jt-material", secret, chromedp.ByQuery),
		chromedp.Click(`#jointoken-form button[type=submit]`, chromedp.ByQuery),
		text("#jt-status", fixed+"은(는) 참여 토큰 없이도 참여할 수 있습니다. 키 1개."),
		chromedp.SetValue("#cap-event", fixed, chromedp.ByQuery),
		chromedp.SetValue("#cap-value", "5", chromedp.ByQuery),
		chromedp.Click(`#capacity-form button`, chromedp.ByQuery),
		text("#cap-status", fixed+"의 현재 설정: 열림, 수용 인원 5, 입장 속도 제한 없음."),
		chromedp.Click(panel(adaptive)+" .edit-adaptive", chromedp.ByQuery),
		eval(fmt.Sprintf(`document.querySelector("#ad-event").value === %q && document.querySelector("#ad-target").value === "400"`, adaptive)),
		chromedp.Click("#ad-save", chromedp.ByQuery),
		text("#ad-status", adaptive+"은(는) 이제 적응형 입장입니다: 목표 p95 400ms, 분당 0~600명, 시작은 분당 60명."),
		chromedp.Evaluate(`document.querySelectorAll("details.guard").forEach((d) => { d.open = true; }); 0`, nil),
		// The adaptive panel in Korean, word for word where it matters.
		eval(fmt.Sprintf(`(() => { const p = document.querySelector(%q); return [...p.querySelectorAll("dt")].map((d) => d.textContent).join() === "속도,단계,신호,마지막 단계,마지막 변경,횟수,설정" &&
			p.querySelector(".changes caption").textContent === "최근 속도 변경 (최신 순)" && p.querySelector(".reporters caption").textContent === "상태 보고자 (최신 보고 순)" &&
			p.querySelector(".mode").textContent === "적응형" && p.querySelector("svg.sparkline").getAttribute("aria-label").startsWith("최근 변경 "); })()`, panel(adaptive))),
		eval(fmt.Sprintf(`[...document.querySelectorAll("#events tbody tr")].some((r) => r.cells[0].textContent === %q && r.cells[7].textContent === "예정")`, drop)),
		english("with the forms' answers"),
	); err != nil {
		t.Fatalf("the console in Korean: %v", err)
	}
	var shot []byte
	if err := chromedp.Run(ctx,
		chooseEvent(adaptive),
		chartNow("p95", `n.p95 === 250 && n.target === 400`),
		english("on the adaptive event"),
		chromedp.FullScreenshot(&shot, 100),
	); err != nil {
		t.Fatalf("the adaptive event in Korean: %v", err)
	}
	saveScreenshot(t, "console-ko-all.png", shot)
}

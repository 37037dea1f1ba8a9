package web_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// logoServer serves a logo over https (the only scheme a page's logoUrl
// takes) and returns its URL; chromium is told to trust its certificate
// (browser's ignore-certificate-errors).
func logoServer(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 160, 48))
	for x := range 160 {
		for y := range 48 {
			img.Set(x, y, color.RGBA{0x1b, 0x1f, 0x24, 0xff})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(b.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/logo.png"
}

// brandEvent creates event ev of capacity with page p, through the store as
// an operator's PUT would.
func brandEvent(t *testing.T, st *stack, ev string, capacity int, p *queue.Page) {
	t.Helper()
	e := st.sys.CreateEvent(ev, capacity, 1)
	e.Page = p
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.sys.Store.PutEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// languages makes the browser's languages (navigator.languages and
// Accept-Language) tags, as a person's browser settings would.
func languages(tags string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var ua string
		if err := chromedp.Evaluate(`navigator.userAgent`, &ua).Do(ctx); err != nil {
			return err
		}
		return emulation.SetUserAgentOverride(ua).WithAcceptLanguage(tags).Do(ctx)
	})
}

// eval waits until the JS expression cond holds in the page.
func eval(cond string) chromedp.Action {
	return chromedp.Poll(cond, nil, chromedp.WithPollingTimeout(20*time.Second))
}

// size makes the page's viewport w × h CSS pixels, as a phone's or a
// desktop's.
func size(w, h int64) chromedp.Action {
	return emulation.SetDeviceMetricsOverride(w, h, 1, w < 600)
}

// noHorizontalScroll holds when the page is no wider than its viewport.
const noHorizontalScroll = `document.documentElement.scrollWidth <= window.innerWidth`

// TestBrandedKoreanPageInARealBrowser: an event branded in Korean (title,
// message, https logo, accent colour, locale ko) shows all of it in
// chromium, in Korean for a Korean browser, with <html lang="ko">, Korean
// and Korean-formatted texts, the accent on the band with a contrasting
// text colour, no horizontal scroll at 360 px, every control named in the
// accessibility tree, and a polite live region that announces the place
// at once and then not on every change, but the turn at once. ?lang=
// switches the language, and a browser in a language the page does not
// speak gets the event's locale.
func TestBrandedKoreanPageInARealBrowser(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	ev := testenv.EventID(t)
	page := &queue.Page{
		Title: "아이유 콘서트 티켓 예매", Message: "잠시만 기다려 주세요.\n\n1인 1매만 구매할 수 있습니다.",
		LogoURL: logoServer(t), AccentColor: "#c2185b", Locale: "ko",
	}
	brandEvent(t, st, ev, 1, page)
	for _, u := range []string{"ahead-1", "ahead-2", "ahead-3"} {
		st.sys.Join(ev, u, time.Now().UnixMilli())
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) { return len(st.sys.Waiting(ev)) == 3, "the three are not in line yet" })

	ctx := browser(t, chrome, chromedp.Flag("ignore-certificate-errors", true))
	var user, lang, band, bandText string
	var png []byte
	if err := chromedp.Run(ctx,
		languages("ko-KR,ko"),
		size(360, 740),
		joinInPage(st.page+"/?event="+ev, &user),
		chromedp.WaitVisible("#line"),
		text("#title", page.Title),
		text("#line-event", page.Title),
		eval(`document.title === "4번째 · `+page.Title+`"`),
		text("#brand-message", "잠시만 기다려 주세요.1인 1매만 구매할 수 있습니다."),
		eval(`document.querySelectorAll("#brand-message p").length === 2`),
		eval(`document.querySelector("#logo").complete && document.querySelector("#logo").naturalWidth === 160 && !document.querySelector("#logo").hidden`),
		text("#place-line", "4명 중 4번째"),
		text("#state-text", "대기열에 있습니다."),
		text("#ahead", "앞에 3명이 있습니다"),
		text("#announce", "대기 중: 4명 중 4번째입니다."),
		text("#lang-form label", "언어"),
		text("#leave", "대기열에서 나가기"),
		eval(`/^마지막 갱신: /.test(document.querySelector("#updated").textContent)`),
		chromedp.Evaluate(`document.documentElement.lang`, &lang),
		chromedp.Evaluate(`getComputedStyle(document.querySelector(".band")).backgroundColor`, &band),
		chromedp.Evaluate(`getComputedStyle(document.querySelector("#lang-form label")).color`, &bandText),
		eval(noHorizontalScroll),
		chromedp.FullScreenshot(&png, 100),
	); err != nil {
		t.Fatalf("the branded Korean page: %v", err)
	}
	saveScreenshot(t, "page-ko-360.png", png)
	if lang != "ko" || band != "rgb(194, 24, 91)" || bandText != "rgb(255, 255, 255)" {
		t.Fatalf("lang %q, band %q with text %q; want ko, the accent, white on it", lang, band, bandText)
	}
	checkAccessibility(ctx, t)

	// One place moves: the position changes at once, the announcement
	// does not (at most every 30 s); the turn is announced at once, with
	// focus on it.
	st.sys.Leave(ev, "ahead-1", time.Now().UnixMilli())
	if err := chromedp.Run(ctx, text("#place-line", "3명 중 3번째"), text("#announce", "대기 중: 4명 중 4번째입니다.")); err != nil {
		t.Fatalf("a move: %v", err)
	}
	st.sys.Leave(ev, "ahead-2", time.Now().UnixMilli())
	st.sys.Leave(ev, "ahead-3", time.Now().UnixMilli())
	if err := chromedp.Run(ctx, text("#state-text", "다음 차례입니다!"), text("#announce", "다음 차례입니다."), text("#ahead", "앞에 아무도 없습니다")); err != nil {
		t.Fatalf("next: %v", err)
	}
	st.gw.MonitorTick(context.Background())
	if err := chromedp.Run(ctx,
		chromedp.WaitVisible("#admitted"),
		text("#admitted-title", "차례가 되었습니다"),
		eval(`document.activeElement === document.querySelector("#admitted-title")`),
		eval(`document.title === "차례입니다 — `+page.Title+`"`),
		eval(`/^차례가 되었습니다. 입장 가능 시간이 (\d+분 )?\d+초 남았습니다.$/.test(document.querySelector("#announce").textContent)`),
		eval(`/^입장이 허용되었습니다. 지금 쇼핑몰로 이동하세요. .+까지 이용할 수 있으며/.test(document.querySelector("#admitted-next").textContent)`),
		text("#token-details summary", "쇼핑몰 개발자용"),
	); err != nil {
		t.Fatalf("the turn: %v", err)
	}

	// ?lang= wins over the browser; a browser in French gets the event's
	// Korean; Japanese is the third language.
	ev2 := ev + "-2"
	brandEvent(t, st, ev2, 1, page)
	st.sys.Join(ev2, "first", time.Now().UnixMilli())
	for _, c := range []struct{ browserLangs, query, lang, place, shot string }{
		{"ko-KR", "&lang=en", "en", "Position 2 of 2", "page-en-desktop.png"},
		{"fr-FR,fr", "", "ko", "2명 중 2번째", "page-ko-desktop.png"},
		{"ko-KR", "&lang=ja", "ja", "2 人中 2 番目", "page-ja-360.png"},
	} {
		w := int64(1280)
		if strings.HasSuffix(c.shot, "360.png") {
			w = 360
		}
		if err := chromedp.Run(ctx,
			languages(c.browserLangs),
			size(w, 800),
			chromedp.Navigate(st.page+"/?event="+ev2+c.query),
			text("#place-line", c.place),
			eval(fmt.Sprintf(`document.documentElement.lang === %q && document.querySelector("#lang").value === %q`, c.lang, c.lang)),
			eval(noHorizontalScroll),
			chromedp.FullScreenshot(&png, 100),
		); err != nil {
			t.Fatalf("%s with ?%s: %v", c.browserLangs, c.query, err)
		}
		saveScreenshot(t, c.shot, png)
	}
	// The switch on the page: Japanese to Korean, keeping the place, as a
	// person chooses it with the keyboard (the option above in the list:
	// en, ko, ja); the choice applies at once, with no button to press
	// (the form's button is in <noscript>).
	if err := chromedp.Run(ctx,
		eval(`document.querySelectorAll("#lang-form button").length === 0`),
		chromedp.Focus("#lang", chromedp.ByQuery),
		chromedp.KeyEvent(kb.ArrowUp),
	); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		// A read that meets the navigation fails; a later one reads the
		// new page.
		var got string
		err := chromedp.Run(ctx, chromedp.Evaluate(`location.search.includes("lang=ko") && document.documentElement.lang + " " + document.querySelector("#place-line").textContent`, &got))
		return err == nil && got == "ko 2명 중 2번째", fmt.Sprintf("after the switch %q, %v", got, err)
	})
}

// checkAccessibility reads chromium's accessibility tree of the page:
// every button, text box and list box has a name, and the announcements
// region is a polite live status.
func checkAccessibility(ctx context.Context, t *testing.T) {
	t.Helper()
	var nodes []*accessibility.Node
	if err := chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		nodes, err = accessibility.GetFullAXTree().Do(ctx)
		return err
	})); err != nil {
		t.Fatal(err)
	}
	str := func(v *accessibility.Value) string {
		if v == nil {
			return ""
		}
		return strings.Trim(string(v.Value), `"`)
	}
	polite := 0
	for _, n := range nodes {
		if n.Ignored {
			continue
		}
		role := str(n.Role)
		switch role {
		case "button", "textbox", "combobox", "ListBox", "link", "progressbar":
			if strings.TrimSpace(str(n.Name)) == "" {
				t.Errorf("a %s without an accessible name (node %s)", role, n.NodeID)
			}
		case "status":
			for _, p := range n.Properties {
				if p.Name == accessibility.PropertyNameLive && str(p.Value) == "polite" {
					polite++
				}
			}
		}
	}
	if polite == 0 {
		t.Error("no polite live status region in the accessibility tree")
	}
}

// TestHostileOperatorTextIsShownAsText: markup in an event's title,
// message and template is shown as written, runs nothing (the page escapes
// it, and its Content-Security-Policy forbids inline scripts anyway), and
// the template's live placeholders keep updating with the line.
func TestHostileOperatorTextIsShownAsText(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	ev := testenv.EventID(t)
	const evil = `<img src=x onerror="window.__pwned=1">`
	page := &queue.Page{
		Title:    "Sale " + evil,
		Message:  "<script>window.__pwned=1</script>",
		Template: "<b>{{title}}</b>: you are {{position}} of {{total}} " + evil + "\n\n{{message}}",
	}
	brandEvent(t, st, ev, 1, page)
	st.sys.Join(ev, "ahead", time.Now().UnixMilli())
	testenv.Eventually(t, 10*time.Second, func() (bool, string) { return len(st.sys.Waiting(ev)) == 1, "ahead is not in line" })

	ctx := browser(t, chrome)
	var user string
	var violations []string
	if err := chromedp.Run(ctx,
		beforePage(`window.__violations = []; document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(e.violatedDirective));`),
		joinInPage(st.page+"/?event="+ev, &user),
		text("#title", page.Title),
		text("#brand-message", "<b>"+page.Title+"</b>: you are 2 of 2 "+evil+page.Message),
		eval(`document.querySelectorAll("#brand-message *:not(p):not(span), #title *").length === 0`),
	); err != nil {
		t.Fatalf("hostile text: %v", err)
	}
	st.sys.Leave(ev, "ahead", time.Now().UnixMilli())
	if err := chromedp.Run(ctx,
		text("#brand-message", "<b>"+page.Title+"</b>: you are 1 of 1 "+evil+page.Message),
		text("#position", "1"),
		eval(`window.__pwned === undefined`),
		// Markup put in the page by other means is held by the policy.
		chromedp.Evaluate(`document.body.insertAdjacentHTML("beforeend", '<img src="/static/none.png" onerror="window.__inline=1">'); 0`, nil),
		eval(`window.__violations.includes("script-src-attr") || window.__violations.includes("script-src")`),
		eval(`window.__inline === undefined && window.__pwned === undefined`),
		chromedp.Evaluate(`window.__violations`, &violations),
	); err != nil {
		t.Fatalf("live updates through the template, and the policy: %v (violations %v)", err, violations)
	}
}

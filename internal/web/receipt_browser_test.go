package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/pkg/draw"
)

// TestReceiptInARealBrowser: a chain drop's page says its draw is a chain
// draw; after the opening and the operator's public value it shows the
// visitor's draw number and place, and "check it" recomputes both in
// chromium with SubtleCrypto from the public draw (the public event's
// draw and the compact numbers) and says so; the page's
// check refuses a receipt of another event, a Merkle path that does not
// lead to the root, and a forged place, each with its reason.
func TestReceiptInARealBrowser(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	sys := st.sys
	ctx := browser(t, chrome)

	ev := testenv.EventID(t)
	opensAt := time.Now().Add(4 * time.Second).UnixMilli()
	e := sys.CreateDrop(ev, 10, 1, opensAt, 60)
	key := [draw.SaltKeySize]byte{4, 2}
	e.DrawSource, e.SaltKey = &draw.PublicSource{Name: "drand", Round: 1234}, &key
	// Paused through the draw, so that nobody is admitted and the page
	// keeps showing the draw.
	setState(t, sys, e, queue.StatePaused)
	for _, u := range []string{"early-1", "early-2", "early-3"} {
		sys.Join(ev, u, time.Now().UnixMilli())
	}
	var user string
	if err := chromedp.Run(ctx,
		joinInPage(st.page+"/?event="+ev, &user),
		chromedp.WaitVisible("#draw"),
		chromedp.Poll(`document.querySelector("#draw-kind").textContent.includes("public random value (drand)")`, nil, chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		t.Fatalf("the chain drop's page: %v", err)
	}

	// The entries freeze 5 s after the opening: the console shows their
	// root, and the operator supplies the value through its form.
	console := browser(t, chrome) // a second browser: its own tab in front
	row := fmt.Sprintf(`[...document.querySelectorAll("#events tbody tr")].find(r => r.cells[0].textContent === %q)`, ev)
	if err := chromedp.Run(console,
		chromedp.Navigate(st.page+"/admin.html"),
		chromedp.SetValue("#admin-token", "t", chromedp.ByQuery),
		chromedp.Click(`#auth button`, chromedp.ByQuery),
		eval(row+`?.textContent.includes("chain draw: drand 1234")`),
		eval(row+`?.querySelector(".supply-value") != null`),
		chromedp.Evaluate(`(() => { const r = `+row+`; r.querySelector(".public-value").value = "5eed"; r.querySelector(".supply-value").click(); return true; })()`, nil),
		eval(row+`?.textContent.includes("public value: 5eed")`),
	); err != nil {
		var dump string
		_ = chromedp.Run(console, chromedp.Evaluate(`document.querySelector("#events")?.innerText + " | " + document.querySelector("#admin-error")?.textContent`, &dump))
		t.Fatalf("the public value through the console: %v\n%s", err, dump)
	}

	var number, place, result string
	if err := chromedp.Run(ctx,
		chromedp.WaitVisible("#receipt"),
		chromedp.Text("#receipt-number", &number, chromedp.ByQuery),
		chromedp.Text("#receipt-place", &place, chromedp.ByQuery),
		chromedp.Click("#receipt-check", chromedp.ByQuery),
		chromedp.Poll(`document.querySelector("#receipt-result").dataset.ok === "true"`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Text("#receipt-result", &result, chromedp.ByQuery),
	); err != nil {
		t.Fatalf("the receipt in the page: %v", err)
	}
	if !strings.Contains(result, "Checked in this browser") || !strings.Contains(result, "place "+place+" of 4") {
		t.Fatalf("the check says %q (number %s, place %s)", result, number, place)
	}

	// The page's check against forged receipts, in the page itself.
	const forge = `(async () => {
		const s = saved();
		const c = await publicDraw(s.event);
		const r = await producerGet(receiptPath(s));
		const why = async (f) => { const x = structuredClone(r); f(x); const v = await verifyReceipt(c, x); return v.ok ? "ok" : v.why; };
		return [
			await why(() => {}),
			await why((x) => { x.eventId = "another-event"; }),
			await why((x) => { x.path = x.path.map((p) => ({ side: p.side, hash: p.hash.replace(/^./, (d) => d === "0" ? "1" : "0") })); }),
			await why((x) => { x.place = x.place % 4 + 1; }),
			await why((x) => { x.number = x.number + 1; }),
		].join(" ");
	})()`
	var verdicts string
	if err := chromedp.Run(ctx, chromedp.Evaluate(forge, &verdicts, func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) })); err != nil {
		t.Fatal(err)
	}
	if verdicts != "ok otherEvent path place number" {
		t.Fatalf("the page's verdicts on the real and forged receipts: %q", verdicts)
	}
}

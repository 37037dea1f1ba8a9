package stack

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitq/waitq/internal/testkit/testclient"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testws"
)

// TestScreenshots takes the screenshots of docs/screenshots.md with
// Debian's chromium against a devstack running a sale, when
// WAITQ_SCREENSHOTS names the directory to write them to
// (scripts/screenshots.sh): the waiting room page in English, Korean and
// Japanese at a desktop's width and at 360 px, and the console charting
// the demo shop's sale. The sale: a visitor joins the demo event and the
// demo shop every second, each keeping a socket open, for 90 seconds
// (nine samples of the series); the shop reports its health as a shop
// without a guard does (POST …/health), its p95 and errors moving, until
// the screenshots are taken.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("WAITQ_SCREENSHOTS")
	if dir == "" {
		t.Skip("WAITQ_SCREENSHOTS is not set (scripts/screenshots.sh sets it)")
	}
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		testenv.Unavailable(t, "chromium not on PATH (scripts/screenshots.sh installs it)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := &Devstack{
		ProducerAddr: testenv.FreeAddr(t), GatewayAddr: testenv.FreeAddr(t), IngestAddr: testenv.FreeAddr(t),
		AdminToken: "screenshots", DemoEvent: "demo", DemoShop: "shop", ShopAddr: testenv.FreeAddr(t),
	}
	var out testenv.Buffer
	d.out = &out
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, testenv.Logger(t)) }()
	defer func() {
		cancel()
		<-done
	}()
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		return strings.Contains(out.String(), "devstack is running"), "no welcome printed"
	})
	api, page := "http://"+d.ProducerAddr, "http://"+d.GatewayAddr

	// The sale: joins for 90 s, health reports until the screenshots are
	// taken.
	reports, stopReports := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopReports()
		wg.Wait()
	}()
	wg.Go(func() { reportHealth(t, reports, api, d.AdminToken, "shop") })
	sale, stopSale := context.WithTimeout(ctx, 90*time.Second)
	defer stopSale()
	joinEverySecond(t, sale, api, page, "demo", "shop")

	shot := func(name string, actions ...chromedp.Action) {
		t.Helper()
		var png []byte
		var err error
		// A second try in a new browser: under the sale's load a page's
		// script can stall.
		for range 2 {
			bctx := screenshotBrowser(t, chrome)
			if err = chromedp.Run(bctx, append(actions, chromedp.Sleep(500*time.Millisecond), chromedp.CaptureScreenshot(&png))...); err == nil {
				break
			}
			t.Logf("%s: %v; trying again", name, err)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d KB)", path, len(png)/1024)
	}
	waiting := chromedp.Poll(`!document.querySelector("#line").hidden && /\d/.test(document.querySelector("#position").textContent) && !/…|-/.test(document.querySelector("#eta").textContent)`,
		nil, chromedp.WithPollingTimeout(60*time.Second))
	for _, lang := range []string{"en", "ko", "ja"} {
		for _, w := range []struct {
			name string
			w, h int64
		}{{"desktop", 1280, 860}, {"360", 360, 780}} {
			shot(fmt.Sprintf("page-%s-%s.png", lang, w.name),
				chromedp.EmulateViewport(w.w, w.h),
				chromedp.Navigate(page+"/?event=demo&lang="+lang), waiting)
		}
	}
	shot("console.png", consoleOn(page, "en", d.AdminToken, "shop")...)
	// The console in Korean shows the same adaptive event, whose shop
	// reports its health: its p95 and error share charts have data.
	shot("console-ko.png", consoleOn(page, "ko", d.AdminToken, "shop")...)
}

// consoleOn opens the console at page in lang, signs in with token and
// shows event's charts once they hold the series and the shop's p95.
func consoleOn(page, lang, token, event string) []chromedp.Action {
	return []chromedp.Action{
		chromedp.EmulateViewport(1440, 1150),
		chromedp.Navigate(page + "/admin.html?lang=" + lang),
		// The console's script has taken the sign-in form over (its
		// language switch is filled): a submit before would reload the
		// page.
		chromedp.Poll(`document.querySelector("#lang").options.length > 0`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.SetValue("#admin-token", token, chromedp.ByQuery),
		chromedp.Click(`#auth button`, chromedp.ByQuery),
		chromedp.WaitVisible("#event-view"),
		chromedp.Poll(`document.querySelector("#view-event").options.length >= 2`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(fmt.Sprintf(`(() => { const s = document.querySelector("#view-event"); s.value = %q; s.dispatchEvent(new Event("change")); return 0; })()`, event), nil),
		chromedp.Poll(fmt.Sprintf(`Number(document.querySelector('figure[data-chart=waiting]').dataset.sampled) >= 5 && document.querySelector("#charts").dataset.event === %q &&
			JSON.parse(document.querySelector('figure[data-chart=p95]').dataset.now || "{}").p95 != null`, event),
			nil, chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.Evaluate(`document.querySelector("#event-view").scrollIntoView(); 0`, nil),
	}
}

// joinEverySecond makes a visitor join each of events every second until
// ctx ends, each keeping a socket open (its presence) until the test ends.
func joinEverySecond(t *testing.T, ctx context.Context, api, page string, events ...string) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		for _, ev := range events {
			v := testclient.NewVisitor(api)
			if _, _, err := v.Identify(ctx); err != nil {
				t.Logf("identify: %v", err)
				continue
			}
			j, ref, err := v.Join(ctx, ev)
			if err != nil || ref != nil {
				t.Logf("join %s: %v %+v", ev, err, ref)
				continue
			}
			if _, err := testws.Dial(t, "ws"+strings.TrimPrefix(page, "http")+j.StatusURL, nil); err != nil {
				t.Logf("socket: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// reportHealth posts event's health every 2 s until ctx ends, as a shop
// reporting its own figures: the p95 and the error share rise and fall.
func reportHealth(t *testing.T, ctx context.Context, api, token, event string) {
	start := time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		x := time.Since(start).Seconds()
		p95 := 260 + 140*math.Sin(x/12)
		errs := 0.015 + 0.012*math.Sin(x/9+1)
		body := fmt.Sprintf(`{"reporter":"shop","windowMs":2000,"requests":%d,"p95Ms":%.1f,"errorRate":%.4f}`, 80+i%20, p95, errs)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, api+"/v1/admin/events/"+event+"/health", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// screenshotBrowser is a headless chromium of its own profile (a visitor
// of its own), closed at cleanup.
func screenshotBrowser(t *testing.T, chrome string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("hide-scrollbars", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancel(); cancelCtx(); cancelAlloc() })
	return ctx
}

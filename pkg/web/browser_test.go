package web_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitq/waitq/internal/testenv"
	"github.com/waitq/waitq/internal/testsys"
	"github.com/waitq/waitq/pkg/entry"
	"github.com/waitq/waitq/pkg/gateway"
	"github.com/waitq/waitq/pkg/producer"
	"github.com/waitq/waitq/pkg/queue"
)

// TestWaitingRoomInARealBrowser drives Debian's chromium through the page
// against the real pipeline: join, see the position appear and change, get
// admitted with a valid entry token, press "done" and free the slot.
func TestWaitingRoomInARealBrowser(t *testing.T) {
	chrome := chromium(t)
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	tickets, _ := queue.NewTicketSigner("browser-test-secret")
	keys, _ := entry.DerivedKeyring("browser-test-secret", nil)
	prod := httptest.NewServer(producer.New(producer.Config{AdminToken: "t", AllowedOrigins: []string{"127.0.0.1:*"}}, producer.Deps{
		Store: sys.Store, Topics: sys.Pub.Admin(), Publisher: sys.Pub, Tickets: tickets, Logger: testenv.Logger(t),
	}))
	defer prod.Close()
	gw := gateway.New(gateway.Config{StatusInterval: 100 * time.Millisecond, AdmitInterval: time.Hour, DisconnectGrace: time.Hour, ProducerURL: prod.URL},
		gateway.Deps{Store: sys.Store, Publisher: sys.Pub, Tickets: tickets, Entry: keys, Logger: testenv.Logger(t)})
	gctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() { _ = gw.Run(gctx) }()
	page := httptest.NewServer(gw)
	defer page.Close()

	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "ahead", 1) // someone is ahead of the browser's user

	ctx := browser(t, chrome)
	if err := chromedp.Run(ctx,
		chromedp.Navigate(page.URL+"/?event="+ev),
		chromedp.WaitVisible("#join-form"),
		chromedp.SetValue("#user", "browser-user", chromedp.ByQuery),
		chromedp.Click("#join", chromedp.ByQuery),
		chromedp.WaitVisible("#line"),
		text("#position", "2"), text("#total", "2"),
	); err != nil {
		t.Fatalf("join in the page: %v", err)
	}
	sys.Leave(ev, "ahead", 2) // the position changes live
	if err := chromedp.Run(ctx, text("#position", "1"), text("#total", "1"), text("#state-text", "You are next!")); err != nil {
		t.Fatalf("position did not move: %v", err)
	}
	gw.MonitorTick(context.Background())
	var token string
	var shot []byte
	if err := chromedp.Run(ctx,
		chromedp.WaitVisible("#admitted"),
		chromedp.Value("#token", &token),
		chromedp.Poll(`document.querySelector("#countdown").textContent.endsWith("s")`, nil),
		chromedp.FullScreenshot(&shot, 100), // 100: PNG
	); err != nil {
		t.Fatalf("admission in the page: %v", err)
	}
	if et, err := keys.Verify(token, ev, time.Now()); err != nil || et.UserID != "browser-user" {
		t.Fatalf("the page shows token %q: %+v %v", token, et, err)
	}
	saveScreenshot(t, shot)
	if err := chromedp.Run(ctx, chromedp.Click("#done", chromedp.ByQuery), chromedp.WaitVisible("#released")); err != nil {
		t.Fatalf("done: %v", err)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		st, err := sys.Store.EventStatus(context.Background(), ev, time.Now().UnixMilli())
		return err == nil && st.Active == 0, fmt.Sprintf("after done: %+v %v", st, err)
	})
}

// TestAdminPageChangesStateAndCapacity drives the admin view in chromium:
// the events table, then a pause, a capacity and a rate change through its
// form, checked in the store.
func TestAdminPageChangesStateAndCapacity(t *testing.T) {
	chrome := chromium(t)
	sys := testsys.Start(t, testsys.Options{})
	tickets, _ := queue.NewTicketSigner("browser-test-secret")
	prod := httptest.NewServer(producer.New(producer.Config{AdminToken: "admin-secret", AllowedOrigins: []string{"127.0.0.1:*"}}, producer.Deps{
		Store: sys.Store, Topics: sys.Pub.Admin(), Publisher: sys.Pub, Tickets: tickets, Logger: testenv.Logger(t),
	}))
	defer prod.Close()
	gw := gateway.New(gateway.Config{ProducerURL: prod.URL}, gateway.Deps{Store: sys.Store, Publisher: sys.Pub, Tickets: tickets, Logger: testenv.Logger(t)})
	page := httptest.NewServer(gw)
	defer page.Close()
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 4, 1)

	ctx := browser(t, chrome)
	row := fmt.Sprintf(`[...document.querySelectorAll("#events tbody tr")].some(r => r.cells[0].textContent === %q && r.cells[1].textContent === %%q && r.cells[4].textContent === %%q && r.cells[6].textContent === %%q)`, ev)
	if err := chromedp.Run(ctx,
		chromedp.Navigate(page.URL+"/admin.html"),
		chromedp.SetValue("#admin-token", "admin-secret", chromedp.ByQuery),
		chromedp.Click(`#auth button`, chromedp.ByQuery),
		chromedp.Poll(fmt.Sprintf(row, "open", "4", "no limit"), nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.SetValue("#cap-event", ev, chromedp.ByQuery),
		chromedp.SetValue("#cap-value", "7", chromedp.ByQuery),
		chromedp.SetValue("#cap-rate", "120", chromedp.ByQuery),
		chromedp.SetValue("#cap-state", "paused", chromedp.ByQuery),
		chromedp.Click(`#capacity-form button`, chromedp.ByQuery),
		chromedp.Poll(fmt.Sprintf(`document.querySelector("#cap-status").textContent === %q`, ev+" is now paused with capacity 7, 120 admissions a minute."), nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Poll(fmt.Sprintf(row, "paused", "7", "120"), nil, chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		t.Fatalf("admin page: %v", err)
	}
	if e, err := sys.Store.Event(context.Background(), ev); err != nil || e.State != queue.StatePaused || e.Capacity != 7 || e.AdmitPerMinute != 120 {
		t.Fatalf("after the form: %+v %v", e, err)
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
// closed at cleanup; its context ends after a minute.
func browser(t *testing.T, chrome string) context.Context {
	t.Helper()
	profile, err := os.MkdirTemp("", "waitq-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(profile), chromedp.WindowSize(390, 844))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
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

// text waits until the element sel shows want.
func text(sel, want string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`document.querySelector(%q).textContent === %q`, sel, want), nil, chromedp.WithPollingTimeout(20*time.Second))
}

// saveScreenshot keeps the admitted page as artifacts/waiting-room.png.
func saveScreenshot(t *testing.T, png []byte) {
	t.Helper()
	dir, _ := filepath.Abs("../../artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "waiting-room.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitq/waitq/internal/testkit/testenv"
)

// noUpgrades is a proxy in front of the gateway that refuses WebSocket
// upgrades and passes everything else.
func noUpgrades(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "no upgrades through this proxy", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// connLog is injected before the page's scripts: it records each state the
// connection line passes through, as "transport:state".
const connLog = `window.connLog = [];
document.addEventListener("DOMContentLoaded", () => {
  const el = document.querySelector("#conn");
  new MutationObserver(() => {
    const e = el.dataset.transport + ":" + el.dataset.state;
    if (window.connLog[window.connLog.length - 1] !== e) window.connLog.push(e);
  }).observe(el, { attributes: true, childList: true });
});`

// beforePage runs scripts in every page the browser opens from now on,
// before the page's own.
func beforePage(scripts ...string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		for _, src := range scripts {
			if _, err := page.AddScriptToEvaluateOnNewDocument(src).Do(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// connSteps waits until the connection line has passed through steps, in
// order (others may come between).
func connSteps(steps ...string) chromedp.Action {
	list := `["` + strings.Join(steps, `","`) + `"]`
	return chromedp.Poll(fmt.Sprintf(`(() => { let i = 0; for (const e of window.connLog) if (e === %s[i]) i++; return i === %d; })()`, list, len(steps)),
		nil, chromedp.WithPollingTimeout(20*time.Second))
}

// behindNoUpgrades starts the stack behind noUpgrades and a browser, with an
// event of one slot where someone is already in line.
func behindNoUpgrades(t *testing.T) (*stack, string, context.Context) {
	t.Helper()
	chrome := chromium(t)
	st := startStackBehind(t, "t", noUpgrades)
	ev := testenv.EventID(t)
	st.sys.CreateEvent(ev, 1, 1)
	st.sys.Join(ev, "ahead", 1)
	return st, ev, browser(t, chrome)
}

// TestWaitingRoomFallsBackToServerSentEvents: behind a proxy that refuses
// WebSocket upgrades, the page says the WebSocket failed, moves to the
// stream route, shows the place and its changes, is admitted over SSE with
// a valid entry token, and "done" releases the slot over HTTP.
func TestWaitingRoomFallsBackToServerSentEvents(t *testing.T) {
	st, ev, ctx := behindNoUpgrades(t)
	sys := st.sys
	var user string
	if err := chromedp.Run(ctx,
		beforePage(connLog),
		joinInPage(st.page+"/?event="+ev, &user),
		chromedp.WaitVisible("#line"),
		text("#position", "2"), text("#total", "2"),
		connSteps("ws:connecting", "sse:fallback", "sse:open"),
		text("#conn", "Connected (server-sent events) — updates every few seconds."),
	); err != nil {
		t.Fatalf("the place over server-sent events: %v", err)
	}
	sys.Leave(ev, "ahead", 2)
	if err := chromedp.Run(ctx, text("#position", "1"), text("#total", "1")); err != nil {
		t.Fatalf("position did not move: %v", err)
	}
	st.gw.MonitorTick(context.Background())
	var token string
	if err := chromedp.Run(ctx, chromedp.WaitVisible("#admitted"), chromedp.Value("#token", &token)); err != nil {
		t.Fatalf("admission over server-sent events: %v", err)
	}
	if et, err := st.keys.Verify(token, ev, time.Now()); err != nil || et.UserID != user {
		t.Fatalf("the page shows token %q: %+v %v", token, et, err)
	}
	pressDone(ctx, t, sys, ev) // a release over HTTP, with the token
}

// TestWaitingRoomFallsBackToPolling: behind the same proxy, in a browser
// without EventSource, the page moves on to polling the status route: it
// shows the place and its changes, and on admission (which a poll says
// without the token) tries the live ways once more, then says that the
// token needs one.
func TestWaitingRoomFallsBackToPolling(t *testing.T) {
	st, ev, ctx := behindNoUpgrades(t)
	sys := st.sys
	var user string
	if err := chromedp.Run(ctx,
		beforePage(connLog, "delete window.EventSource;"),
		joinInPage(st.page+"/?event="+ev, &user),
		chromedp.WaitVisible("#line"),
		text("#position", "2"), text("#total", "2"),
		connSteps("ws:connecting", "sse:fallback", "poll:fallback", "poll:polling"),
	); err != nil {
		t.Fatalf("the place by polling: %v", err)
	}
	sys.Leave(ev, "ahead", 2)
	if err := chromedp.Run(ctx, text("#position", "1"), text("#total", "1"), text("#state-text", "You are next!")); err != nil {
		t.Fatalf("position did not move: %v", err)
	}
	st.gw.MonitorTick(context.Background())
	if err := chromedp.Run(ctx,
		connSteps("poll:polling", "ws:connecting", "sse:fallback", "poll:fallback", "poll:polling"),
		chromedp.Poll(`document.querySelector("#state-text").textContent.startsWith("It is your turn, but the entry token comes only over a live connection")`,
			nil, chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		var log []string
		_ = chromedp.Run(ctx, chromedp.Evaluate(`window.connLog`, &log))
		t.Fatalf("admission while polling (connection line %v): %v", log, err)
	}
}

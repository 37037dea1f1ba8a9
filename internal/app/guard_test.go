package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/stack/svcproc"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/pkg/entry"
)

// TestGuardServesTheDemoShop runs waitq-guard from its flags in front of the
// demo shop, with a stand-in gateway serving keys and releases and a
// stand-in producer-api taking health reports, and walks a visitor from the
// redirect to the line to the order.
func TestGuardServesTheDemoShop(t *testing.T) {
	keys, err := entry.NewKeyring("k1", []byte(strings.Repeat("g", 32)), nil)
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan string, 1)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/jwks.json":
			w.Write(keys.JWKS())
		case "/v1/events/drop/release":
			var b struct{ Token string }
			_ = json.NewDecoder(r.Body).Decode(&b)
			released <- b.Token
			io.WriteString(w, `{"released":true}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(gw.Close)
	shop := httptest.NewServer(demoshop.Handler())
	t.Cleanup(shop.Close)
	producer, reports := healthReceiver(t, "drop")

	addr := testenv.FreeAddr(t)
	out := runProgram(t, &Guard{}, "/waitq-guard/readyz", "-http-addr", addr, "-origin-url", shop.URL, "-event-id", "drop", "-gateway-url", gw.URL,
		"-waiting-room-url", "http://127.0.0.1:8081/", "-done-path", "/order", "-cookie-insecure",
		"-health-url", producer.URL, "-health-token", healthToken, "-health-interval", "20ms", "-health-window", "1m",
		"-health-reporter", "guard-test")
	base := "http://" + addr

	jar := &cookieJar{}
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, _ := get(http.MethodGet, "/product/1"); resp.StatusCode != 302 ||
		resp.Header.Get("Location") != "http://127.0.0.1:8081/?event=drop&returnTo="+url.QueryEscape(base+"/product/1") {
		t.Fatalf("unadmitted: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := get(http.MethodGet, "/static/shop.css"); resp.StatusCode != 200 || !strings.Contains(body, "font-family") {
		t.Fatalf("stylesheet without a token: %d", resp.StatusCode)
	}
	tok := keys.Sign(entry.Token{EventID: "drop", UserID: "alice", Expires: time.Now().Add(time.Hour).UnixMilli()})
	if resp, _ := get(http.MethodGet, "/product/1?waitq_token="+tok); resp.StatusCode != 302 || resp.Header.Get("Location") != "/product/1" {
		t.Fatalf("arrival: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := get(http.MethodGet, "/product/1"); resp.StatusCode != 200 || !strings.Contains(body, "as alice") {
		t.Fatalf("admitted: %d\n%s", resp.StatusCode, body)
	}
	if resp, body := get(http.MethodPost, "/order"); resp.StatusCode != 200 || !strings.Contains(body, "Order placed") {
		t.Fatalf("order: %d\n%s", resp.StatusCode, body)
	}
	select {
	case got := <-released:
		if got != tok {
			t.Fatalf("released %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no release after the order")
	}
	if resp, _ := get(http.MethodGet, "/product/1"); resp.StatusCode != 302 {
		t.Fatalf("after the order the cookie still admits: %d", resp.StatusCode)
	}
	// The release is counted once the gateway's answer is read, after the
	// stand-in gateway got it.
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		resp, body := get(http.MethodGet, "/waitq-guard/metrics")
		return resp.StatusCode == 200 && strings.Contains(body, `waitq_guard_releases_total{event="drop",result="released"} 1`), "no release counted"
	})
	// The admitted product page and the order reached the shop through the
	// guard; the health reports count them, and nothing else.
	deadline := time.After(10 * time.Second)
	for {
		var h queue.HealthReport
		select {
		case h = <-reports:
		case <-deadline:
			t.Fatal("no health report counted the visitor's two pages")
		}
		if h.Reporter != "guard-test" || h.WindowMs != 60_000 || *h.Requests > 2 {
			t.Fatalf("health report %+v", h)
		}
		if *h.Requests == 2 {
			if *h.ErrorRate != 0 || *h.P95Ms <= 0 {
				t.Fatalf("health report %+v: want no error and a p95", h)
			}
			break
		}
	}
	if strings.Contains(out.String(), healthToken) {
		t.Error("the log shows the health token")
	}
}

// healthToken is the token the stand-in producer-api takes health reports
// with.
const healthToken = "health-token-of-the-event"

// healthReceiver is a stand-in producer-api taking the health reports of
// event: it checks the token, decodes and validates each report, and sends
// it on the channel (when there is room).
func healthReceiver(t *testing.T, event string) (*httptest.Server, chan queue.HealthReport) {
	reports := make(chan queue.HealthReport, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var h queue.HealthReport
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/v1/admin/events/"+event+"/health":
			http.NotFound(w, r)
		case r.Header.Get("Authorization") != "Bearer "+healthToken:
			http.Error(w, `{"error":{"code":"unauthorized","message":"bad token"}}`, http.StatusUnauthorized)
		case json.NewDecoder(r.Body).Decode(&h) != nil || h.Validate() != nil:
			http.Error(w, `{"error":{"code":"invalid_body","message":"bad report"}}`, http.StatusBadRequest)
		default:
			select {
			case reports <- h:
			default:
			}
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, reports
}

// runProgram runs svc from args until the test ends, and waits until it
// answers 200 on readyPath of its -http-addr (args[1]). It returns the
// program's log, which the test shows at its end.
func runProgram(t *testing.T, svc Service, readyPath string, args ...string) *testenv.Buffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	out := &testenv.Buffer{}
	go func() { done <- Run(ctx, svc, args, func(string) string { return "" }, out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s stopped with %v", svc.Name(), err)
		}
		t.Logf("%s log:\n%s", svc.Name(), out.String())
	})
	if err := svcproc.WaitReady(ctx, "http://"+args[1]+readyPath, nil, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGuardReportsAnOverloadedShop puts waitq-guard in front of the demoshop
// program with one worker and a long work time: of two visitors at once,
// one holds the worker and the other waits past the queue timeout and gets
// 503, which the guard reports as an error. The one who holds the worker
// then leaves, and does not count.
func TestGuardReportsAnOverloadedShop(t *testing.T) {
	keys, err := entry.NewKeyring("k1", []byte(strings.Repeat("o", 32)), nil)
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(keys.JWKS()) }))
	t.Cleanup(gw.Close)
	producer, reports := healthReceiver(t, "rush")
	shopAddr, guardAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	runProgram(t, &DemoShop{}, "/healthz", "-http-addr", shopAddr,
		"-shop-workers", "1", "-shop-work-time", "1m", "-shop-queue-timeout", "20ms")
	runProgram(t, &Guard{}, "/waitq-guard/readyz", "-http-addr", guardAddr, "-origin-url", "http://"+shopAddr,
		"-event-id", "rush", "-jwks-url", gw.URL, "-waiting-room-url", "http://127.0.0.1:8081/",
		"-health-url", producer.URL, "-health-token", healthToken, "-health-interval", "20ms", "-health-window", "1m")

	tok := keys.Sign(entry.Token{EventID: "rush", UserID: "bob", Expires: time.Now().Add(time.Hour).UnixMilli()})
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	type answer struct {
		status int
		body   string
		err    error
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+guardAddr+"/product/2", nil)
			req.Header.Set("Cookie", "waitq_entry_rush="+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			answers <- answer{resp.StatusCode, string(b), nil}
		}()
	}
	// The worker is held for a minute: the first answer is the busy page.
	if a := <-answers; a.err != nil || a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, "The shop is busy") {
		t.Fatalf("the visitor without a worker: %d %v\n%s", a.status, a.err, a.body)
	}
	leave()
	if a := <-answers; a.err == nil {
		t.Fatalf("the visitor who left got %d", a.status)
	}
	for {
		var h queue.HealthReport
		select {
		case h = <-reports:
		case <-time.After(10 * time.Second):
			t.Fatal("no report counted the busy page")
		}
		if h.Reporter != guard.DefaultReporterName() || *h.Requests > 1 {
			t.Fatalf("report %+v", h)
		}
		if *h.Requests == 1 {
			if *h.ErrorRate != 1 {
				t.Fatalf("report %+v: the busy page is an error", h)
			}
			break
		}
	}
}

func TestDemoShopValidate(t *testing.T) {
	tests := []struct {
		name string
		shop DemoShop
		ok   bool
	}{
		{"defaults", DemoShop{Config: demoshop.Config{QueueTimeout: 2 * time.Second}}, true},
		{"a pool", DemoShop{Config: demoshop.Config{Workers: 8, WorkTime: 20 * time.Millisecond, QueueTimeout: time.Second}}, true},
		{"negative workers", DemoShop{Config: demoshop.Config{Workers: -1, QueueTimeout: time.Second}}, false},
		{"negative work time", DemoShop{Config: demoshop.Config{WorkTime: -time.Millisecond, QueueTimeout: time.Second}}, false},
		{"work time over a minute", DemoShop{Config: demoshop.Config{WorkTime: 2 * time.Minute, QueueTimeout: time.Second}}, false},
		{"no queue timeout", DemoShop{Config: demoshop.Config{Workers: 1}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.shop.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// cookieJar keeps the cookies of one host as a browser would for the guard:
// set, replaced, and deleted by Max-Age.
type cookieJar struct{ cookies []*http.Cookie }

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) {
	for _, c := range cs {
		kept := j.cookies[:0]
		for _, old := range j.cookies {
			if old.Name != c.Name {
				kept = append(kept, old)
			}
		}
		j.cookies = kept
		if c.MaxAge >= 0 && c.Value != "" {
			j.cookies = append(j.cookies, c)
		}
	}
}

func (j *cookieJar) Cookies(*url.URL) []*http.Cookie { return j.cookies }

func TestGuardValidate(t *testing.T) {
	ok := func() *Guard {
		return &Guard{Config: guard.Config{OriginURL: "http://127.0.0.1:8090", EventID: "drop", WaitingRoomURL: "https://queue.example.com/",
			GatewayURL: "http://127.0.0.1:8081", Protect: []string{"/"}, CookiePath: "/",
			OriginTimeout: 30 * time.Second, Report: guard.ReportConfig{Interval: time.Second}, HealthWindow: 10 * time.Second}}
	}
	reporting := func(g *Guard) { g.Config.Report.URL, g.Config.Report.Token = "http://127.0.0.1:8080", "tok" }
	if err := ok().Validate(); err != nil {
		t.Fatalf("valid settings refused: %v", err)
	}
	for name, mod := range map[string]func(g *Guard){
		"no origin":             func(g *Guard) { g.Config.OriginURL = "" },
		"origin without scheme": func(g *Guard) { g.Config.OriginURL = "127.0.0.1:8090" },
		"bad event id":          func(g *Guard) { g.Config.EventID = "a b" },
		"no waiting room":       func(g *Guard) { g.Config.WaitingRoomURL = "" },
		"no gateway nor jwks":   func(g *Guard) { g.Config.GatewayURL = "" },
		"done path without gateway": func(g *Guard) {
			g.Config.GatewayURL, g.Config.JWKSURL, g.Config.DonePath = "", "http://k/jwks", "/order"
		},
		"protect nothing":              func(g *Guard) { g.Config.Protect = nil },
		"relative protect pattern":     func(g *Guard) { g.Config.Protect = []string{"product/"} },
		"bad bypass glob":              func(g *Guard) { g.Config.Bypass = []string{"/["} },
		"relative done path":           func(g *Guard) { g.Config.DonePath = "order" },
		"jwks url that is not a URL":   func(g *Guard) { g.Config.JWKSURL = "keys" },
		"no origin timeout":            func(g *Guard) { g.Config.OriginTimeout = 0 },
		"health url not http":          func(g *Guard) { reporting(g); g.Config.Report.URL = "127.0.0.1:8080" },
		"health url without token":     func(g *Guard) { reporting(g); g.Config.Report.Token = "" },
		"no health interval":           func(g *Guard) { g.Config.Report.Interval = 0 },
		"window under the interval":    func(g *Guard) { g.Config.Report.Interval, g.Config.HealthWindow = 5*time.Second, 2*time.Second },
		"window over an hour":          func(g *Guard) { g.Config.HealthWindow = 2 * time.Hour },
		"bad reporter name":            func(g *Guard) { g.Config.Report.Reporter = "guard a" },
		"forward auth without proxies": func(g *Guard) { g.Config.ForwardAuth = true },
		"forward auth trusting all":    func(g *Guard) { g.Config.ForwardAuth, g.Config.TrustedProxies = true, []string{"0.0.0.0/0"} },
		"bad trusted proxy":            func(g *Guard) { g.Config.TrustedProxies = []string{"proxy.local"} },
		"forward auth with a bad origin": func(g *Guard) {
			g.Config.ForwardAuth, g.Config.TrustedProxies, g.Config.OriginURL = true, []string{"10.0.0.1"}, "origin"
		},
		"forward auth, health reports, no origin": func(g *Guard) {
			reporting(g)
			g.Config.ForwardAuth, g.Config.TrustedProxies, g.Config.OriginURL = true, []string{"10.0.0.1"}, ""
		},
	} {
		g := ok()
		mod(g)
		if err := g.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	g := ok()
	reporting(g)
	g.Config.Report.Reporter = "guard-1.eu:a_b"
	if err := g.Validate(); err != nil {
		t.Errorf("health reports refused: %v", err)
	}
	g = ok()
	g.Config.ForwardAuth, g.Config.TrustedProxies, g.Config.OriginURL = true, []string{"10.0.0.0/8", "::1"}, ""
	if err := g.Validate(); err != nil {
		t.Errorf("forward auth without an origin refused: %v", err)
	}
	g = ok()
	g.Config.GatewayURL, g.Config.JWKSURL = "", "http://127.0.0.1:8081/.well-known/jwks.json"
	if err := g.Validate(); err != nil || g.Config.KeysURL() != g.Config.JWKSURL {
		t.Errorf("keys without a gateway URL: %v", err)
	}
}

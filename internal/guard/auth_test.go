package guard_test

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/pkg/entry"
)

// forwardAuth is a guard fixture with the forward-auth endpoint on,
// trusting the loopback proxy the test is.
func forwardAuth(t *testing.T, mod func(*guard.Config)) *fixture {
	return newFixture(t, func(c *guard.Config) {
		c.ForwardAuth, c.TrustedProxies = true, []string{"127.0.0.1", "::1"}
		c.Protect = []string{"/product/", "/order", "/cart"}
		if mod != nil {
			mod(c)
		}
	})
}

// ask sends the subrequest a proxy sends for method uri on shop.example.com.
func (f *fixture) ask(t *testing.T, method, uri, cookie string, header ...string) (*http.Response, string) {
	t.Helper()
	h := append([]string{guard.ForwardedMethodHeader, method, guard.ForwardedURIHeader, uri,
		guard.ForwardedHostHeader, "shop.example.com", guard.ForwardedProtoHeader, "https"}, header...)
	return f.do(t, http.MethodGet, guard.AuthPath, cookie, h...)
}

func TestForwardAuthAdmitsLikeTheProxy(t *testing.T) {
	f := forwardAuth(t, nil)
	tok := f.token("alice")
	cookie := "waitq_entry_" + event + "=" + tok

	// Arrival: the cookie, and the same address without the token.
	resp, _ := f.ask(t, http.MethodGet, "/product/7?waitq_token="+tok+"&ref=mail", "")
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "/product/7?ref=mail" {
		t.Fatalf("arrival: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if c := resp.Cookies(); len(c) != 1 || c[0].Value != tok || !c[0].HttpOnly || !c[0].Secure {
		t.Fatalf("arrival Set-Cookie %q", resp.Header.Values("Set-Cookie"))
	}
	// Admitted: 204 with the user's headers; a forged header is not echoed.
	resp, _ = f.ask(t, http.MethodPost, "/cart", "theme=dark; "+cookie, guard.UserHeader, "mallory")
	if resp.StatusCode != 204 || resp.Header.Get(guard.UserHeader) != "alice" || resp.Header.Get(guard.ExpiresHeader) == "" {
		t.Fatalf("admitted: %d %v", resp.StatusCode, resp.Header)
	}
	if resp.Header.Get(guard.TokenHeader) != "" {
		t.Fatalf("the token went out without WAITQ_FORWARD_TOKEN")
	}
	// Not admitted: the waiting room with the visitor's https address.
	resp, _ = f.ask(t, http.MethodGet, "/product/7?ref=mail", "")
	back := "https://shop.example.com/product/7?ref=mail"
	if loc := resp.Header.Get("Location"); resp.StatusCode != 302 || loc != room+"?event="+event+"&returnTo="+url.QueryEscape(back) {
		t.Fatalf("to the line: %d, Location %q", resp.StatusCode, loc)
	}
	resp, body := f.ask(t, http.MethodGet, "/cart", "", "Accept", "application/json")
	if resp.StatusCode != 401 || !strings.Contains(body, `"entry_required"`) || !strings.HasPrefix(resp.Header.Get(guard.WaitingRoomHeader), room) {
		t.Fatalf("API client: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	// Bypassed: 204 without a user; paths that are not clean are guarded.
	if resp, _ := f.ask(t, http.MethodGet, "/static/app.css", ""); resp.StatusCode != 204 || resp.Header.Get(guard.UserHeader) != "" {
		t.Fatalf("bypassed: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := f.ask(t, http.MethodGet, "/static/../order", ""); resp.StatusCode != 302 {
		t.Fatalf("/static/../order: %d", resp.StatusCode)
	}
	// Through the guard's own proxy the origin saw nothing.
	if _, n := f.origin.last(); n != 0 {
		t.Fatalf("the origin got %d requests", n)
	}
	m := f.metrics(t)
	wantMetric(t, m, `waitq_guard_requests_total{event="shop-sale",outcome="entered"} 1`)
	wantMetric(t, m, `waitq_guard_requests_total{event="shop-sale",outcome="passed"} 1`)
	wantMetric(t, m, `waitq_guard_requests_total{event="shop-sale",outcome="to_line"} 3`)
}

func TestForwardAuthDonePathReleasesTheSlot(t *testing.T) {
	// No origin: the 204 is the done path's answer.
	f := forwardAuth(t, func(c *guard.Config) { c.OriginURL, c.DonePath = "", "/order" })
	tok := f.token("alice")
	cookie := "waitq_entry_" + event + "=" + tok
	// Another path, and the done path without a valid token: no release.
	if resp, _ := f.ask(t, http.MethodGet, "/cart", cookie); resp.StatusCode != 204 || len(resp.Cookies()) != 0 {
		t.Fatalf("cart: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := f.ask(t, http.MethodPost, "/order", ""); resp.StatusCode != 302 {
		t.Fatalf("order without a token: %d", resp.StatusCode)
	}
	// The order: go on, with the user, the cookie cleared, the slot released.
	resp, _ := f.ask(t, http.MethodPost, "/order?step=pay", cookie)
	if resp.StatusCode != 204 || resp.Header.Get(guard.UserHeader) != "alice" {
		t.Fatalf("order: %d %v", resp.StatusCode, resp.Header)
	}
	if c := resp.Cookies(); len(c) != 1 || c[0].Name != "waitq_entry_"+event || c[0].Value != "" || c[0].MaxAge >= 0 {
		t.Fatalf("the cookie is not cleared: %q", resp.Header.Values("Set-Cookie"))
	}
	select {
	case got := <-f.releases:
		if got != tok {
			t.Fatalf("released %q, want the token", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway got no release")
	}
	f.guard.Wait()
	select {
	case got := <-f.releases:
		t.Fatalf("a second release: %q", got)
	default:
	}
	m := f.metrics(t)
	wantMetric(t, m, `waitq_guard_releases_total{event="shop-sale",result="released"} 1`)
	wantMetric(t, m, `waitq_guard_requests_total{event="shop-sale",outcome="passed"} 2`)
	// A decision is no answer of the origin: the health figures stay empty.
	if h := f.guard.Health(time.Now()); *h.Requests != 0 {
		t.Fatalf("health counted %d forward-auth decisions", *h.Requests)
	}
}

// TestDonePathVariantsRelease: through the guard's proxy and its
// forward-auth endpoint, a spelling of the done path an origin may serve as
// the order releases the slot too (entry.PathKey).
func TestDonePathVariantsRelease(t *testing.T) {
	for _, auth := range []bool{false, true} {
		// The fixture's exact "/order" covers "/order/" too.
		f := forwardAuth(t, func(c *guard.Config) { c.DonePath = "/order" })
		for _, uri := range []string{"/ORDER", "/order;x=1", "/cart/../order", "/order/", "//order", "/%256Frder"} {
			tok := f.token("alice")
			cookie := "waitq_entry_" + event + "=" + tok
			var resp *http.Response
			if auth {
				resp, _ = f.ask(t, http.MethodPost, uri, cookie)
			} else {
				resp, _ = f.do(t, http.MethodPost, uri, cookie)
			}
			f.guard.Wait()
			select {
			case got := <-f.releases:
				if got != tok || resp.StatusCode >= 300 {
					t.Errorf("auth %v, %s: %d, released %q", auth, uri, resp.StatusCode, got)
				}
			default:
				t.Errorf("auth %v, %s: %d, nothing released", auth, uri, resp.StatusCode)
			}
		}
	}
}

func TestForwardAuthRedirectsAs401ForNginx(t *testing.T) {
	f := forwardAuth(t, nil)
	tok := f.token("alice")
	resp, _ := f.do(t, http.MethodGet, guard.AuthPath+"?redirect=401", "",
		guard.ForwardedURIHeader, "/product/7?waitq_token="+tok, guard.ForwardedHostHeader, "shop.example.com")
	if resp.StatusCode != 401 || resp.Header.Get("Location") != "/product/7" || len(resp.Cookies()) != 1 {
		t.Fatalf("arrival: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = f.do(t, http.MethodGet, guard.AuthPath+"?redirect=401", "",
		guard.ForwardedURIHeader, "/product/7", guard.ForwardedHostHeader, "shop.example.com")
	if loc := resp.Header.Get("Location"); resp.StatusCode != 401 || !strings.HasPrefix(loc, room) || resp.Header.Get(guard.WaitingRoomHeader) != loc {
		t.Fatalf("to the line: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestForwardAuthIsNoOpenRedirect(t *testing.T) {
	f := forwardAuth(t, func(c *guard.Config) { c.Protect = []string{"/"} })
	tok := f.token("alice")
	for _, uri := range []string{"//evil.example/x", "/\\evil.example/x", "/%2F%2Fevil.example/x", "/%5Cevil.example", "///evil.example", "/\\/evil.example"} {
		resp, _ := f.ask(t, http.MethodGet, uri+"?waitq_token="+tok, "")
		loc := resp.Header.Get("Location")
		u, err := url.Parse(loc)
		if resp.StatusCode != 302 || err != nil || u.Host != "" || u.Scheme != "" || !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\") {
			t.Errorf("%s: %d, Location %q", uri, resp.StatusCode, loc)
		}
	}
}

func TestForwardAuthRefusesUntrustedPeersAndBadHeaders(t *testing.T) {
	f := forwardAuth(t, func(c *guard.Config) { c.TrustedProxies = []string{"10.0.0.0/8"} })
	resp, body := f.ask(t, http.MethodGet, "/product/7", "")
	if resp.StatusCode != 403 || !strings.Contains(body, "untrusted_proxy") {
		t.Fatalf("untrusted peer: %d %s", resp.StatusCode, body)
	}
	f = forwardAuth(t, nil)
	for _, h := range [][]string{
		{},
		{guard.ForwardedURIHeader, "http://evil.example/"},
		{guard.ForwardedURIHeader, "evil"},
		{guard.ForwardedURIHeader, "/a b"},
		{guard.ForwardedURIHeader, "/x", guard.ForwardedHostHeader, "evil.example/x"},
		{guard.ForwardedURIHeader, "/x", guard.ForwardedHostHeader, "user@evil.example"},
		{guard.ForwardedURIHeader, "/x", guard.ForwardedProtoHeader, "javascript"},
		{guard.ForwardedURIHeader, "/x", guard.ForwardedMethodHeader, "G ET"},
	} {
		resp, body := f.do(t, http.MethodGet, guard.AuthPath, "", h...)
		var e struct{ Error struct{ Code string } }
		_ = json.Unmarshal([]byte(body), &e)
		if resp.StatusCode != 400 || e.Error.Code != "bad_forwarded_request" {
			t.Errorf("%q: %d %s", h, resp.StatusCode, body)
		}
	}
}

// TestForwardAuthReadsOnlyItsURIHeader: the guard reads the request from
// the one header its proxy sets (WAITQ_FORWARDED_URI_HEADER); a visitor's
// other URI header, or a second value of the URI or the method, that
// disagrees is refused, never judged (Caddy passes a visitor's
// X-Original-URI, nginx a visitor's X-Forwarded-Uri).
func TestForwardAuthReadsOnlyItsURIHeader(t *testing.T) {
	for _, tc := range []struct {
		setting string
		header  []string
		want    int // 0: 400 bad_forwarded_request
	}{
		// The bypassed stylesheet named beside the guarded page.
		{"", []string{guard.ForwardedURIHeader, "/product/7", guard.OriginalURIHeader, "/static/app.css"}, 0},
		{"", []string{guard.OriginalURIHeader, "/static/app.css", guard.ForwardedURIHeader, "/product/7"}, 0},
		{"", []string{guard.OriginalURIHeader, "/static/app.css"}, 0},
		{"", []string{guard.ForwardedURIHeader, "/product/7", guard.OriginalURIHeader, "/product/7"}, 302},
		{"", []string{guard.ForwardedURIHeader, "/product/7"}, 302},
		{"X-Original-URI", []string{guard.OriginalURIHeader, "/product/7", guard.ForwardedURIHeader, "/static/app.css"}, 0},
		{"X-Original-URI", []string{guard.ForwardedURIHeader, "/static/app.css"}, 0},
		{"x-original-uri", []string{guard.OriginalURIHeader, "/product/7"}, 302},
		{"X-Original-URI", []string{guard.OriginalURIHeader, "/static/app.css"}, 204},
		// Two values: the proxy's and the visitor's.
		{"", []string{guard.ForwardedURIHeader, "/product/7", guard.ForwardedURIHeader, "/static/app.css"}, 0},
		{"", []string{guard.ForwardedURIHeader, "/static/app.css", guard.ForwardedURIHeader, "/product/7"}, 0},
		// The order judged as a GET.
		{"", []string{guard.ForwardedURIHeader, "/order", guard.ForwardedMethodHeader, "POST", guard.ForwardedMethodHeader, "GET"}, 0},
		{"", []string{guard.ForwardedURIHeader, "/order", guard.ForwardedMethodHeader, "GET", guard.ForwardedMethodHeader, "POST"}, 0},
	} {
		f := forwardAuth(t, func(c *guard.Config) { c.ForwardedURIHeader = tc.setting })
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+guard.AuthPath, nil)
		for i := 0; i+1 < len(tc.header); i += 2 {
			req.Header.Add(tc.header[i], tc.header[i+1])
		}
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error struct{ Code string } }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if want := cmp.Or(tc.want, 400); resp.StatusCode != want || (want == 400 && e.Error.Code != "bad_forwarded_request") {
			t.Errorf("%s %q: %d %q, want %d", tc.setting, tc.header, resp.StatusCode, e.Error.Code, want)
		}
	}
}

func TestForwardAuthOffByDefault(t *testing.T) {
	f := newFixture(t, nil)
	// Not through the contract's check: the route is declared, and off.
	req := httptest.NewRequest(http.MethodGet, guard.AuthPath, nil)
	req.Header.Set(guard.ForwardedURIHeader, "/")
	rec := httptest.NewRecorder()
	f.guard.ServeHTTP(rec, req)
	if rec.Code != 404 {
		t.Fatalf("auth route without WAITQ_FORWARD_AUTH: %d", rec.Code)
	}
}

func TestForwardAuthConfig(t *testing.T) {
	base := guard.Config{EventID: event, WaitingRoomURL: room, GatewayURL: "http://gw.example"}
	for _, tc := range []struct {
		name string
		mod  func(*guard.Config)
		want string // "" for valid
	}{
		{"origin optional", func(c *guard.Config) { c.ForwardAuth, c.TrustedProxies = true, []string{"10.0.0.0/8"} }, ""},
		{"origin needed without it", func(c *guard.Config) {}, "WAITQ_ORIGIN_URL"},
		{"no proxies", func(c *guard.Config) { c.ForwardAuth = true }, "WAITQ_TRUSTED_PROXIES is required"},
		{"bad proxy", func(c *guard.Config) { c.ForwardAuth, c.TrustedProxies = true, []string{"10.0.0.0/33"} }, `WAITQ_TRUSTED_PROXIES: "10.0.0.0/33"`},
		{"everyone", func(c *guard.Config) { c.ForwardAuth, c.TrustedProxies = true, []string{"0.0.0.0/0"} }, "trusts every address"},
		{"everyone v6", func(c *guard.Config) { c.ForwardAuth, c.TrustedProxies = true, []string{"::/0"} }, "trusts every address"},
		{"done path without the origin", func(c *guard.Config) {
			c.ForwardAuth, c.TrustedProxies, c.DonePath = true, []string{"127.0.0.1"}, "/order"
		}, ""},
		{"health reports need the origin", func(c *guard.Config) {
			c.ForwardAuth, c.TrustedProxies = true, []string{"127.0.0.1"}
			c.Report = guard.ReportConfig{URL: "http://producer.example", Token: "t"}
		}, "WAITQ_HEALTH_URL with WAITQ_FORWARD_AUTH needs WAITQ_ORIGIN_URL"},
		{"health reports with the origin", func(c *guard.Config) {
			c.ForwardAuth, c.TrustedProxies, c.OriginURL = true, []string{"127.0.0.1"}, "http://shop.example"
			c.Report = guard.ReportConfig{URL: "http://producer.example", Token: "t"}
		}, ""},
		{"bad URI header", func(c *guard.Config) { c.ForwardedURIHeader = "X-Uri" }, "WAITQ_FORWARDED_URI_HEADER"},
		{"nginx's URI header", func(c *guard.Config) {
			c.ForwardAuth, c.TrustedProxies, c.ForwardedURIHeader = true, []string{"127.0.0.1"}, "X-Original-URI"
		}, ""},
		{"bad origin", func(c *guard.Config) {
			c.ForwardAuth, c.TrustedProxies, c.OriginURL = true, []string{"127.0.0.1"}, "ftp://x"
		}, "WAITQ_ORIGIN_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mod(&c)
			_, err := guard.New(c, guard.Deps{Keys: entry.NewKeySource(entry.KeySourceConfig{URL: "http://gw.example/jwks"})})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

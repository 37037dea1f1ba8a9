package guard_test

// The forward-auth endpoint behind the real proxies, each started with the
// configuration shipped in deploy/, in front of the demo shop.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testproxy"
)

// shopVisit is what the demo shop got with one request.
type shopVisit struct {
	uri, user string
	forged    []string // other spellings of the guard's headers (identitySpellings)
}

// recordedShop is the demo shop, recording what reaches it.
type recordedShop struct {
	*httptest.Server
	mu  sync.Mutex
	got []shopVisit
}

func newRecordedShop(t *testing.T) *recordedShop {
	s := &recordedShop{}
	shop := demoshop.Handler()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, shopVisit{r.URL.RequestURI(), strings.Join(r.Header.Values(guard.UserHeader), ","), identitySpellings(r.Header)})
		s.mu.Unlock()
		shop.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *recordedShop) last() (shopVisit, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) == 0 {
		return shopVisit{}, 0
	}
	return s.got[len(s.got)-1], len(s.got)
}

func TestForwardAuthBehindRealProxies(t *testing.T) {
	for _, p := range []struct {
		name  string
		start testproxy.Proxy
		// clears: the proxy passes the Set-Cookie of the guard's 2xx
		// (nginx's add_header); Caddy's forward_auth drops it, and the
		// token is refused from the guard's next poll of the released
		// admissions instead.
		clears bool
	}{
		{"nginx", testproxy.Nginx, true},
		{"caddy", testproxy.Caddy, false},
	} {
		t.Run(p.name, func(t *testing.T) {
			shop := newRecordedShop(t)
			f := forwardAuth(t, func(c *guard.Config) {
				// Forward authentication only: the shop is reached
				// through the proxy, the done path too.
				c.OriginURL, c.DonePath, c.CookieInsecure = "", "/order", true
				c.ReleasedInterval = 100 * time.Millisecond
			})
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go f.guard.RunReleased(ctx)
			addr := p.start(t, strings.TrimPrefix(f.srv.URL, "http://"), strings.TrimPrefix(shop.URL, "http://"))
			walkThroughProxy(t, f, shop, "http://"+addr, p.clears)
		})
	}
}

// walkThroughProxy walks a visitor through the proxy at base: sent to the
// line, arriving with a token, shopping, ordering (released: the cookie
// cleared by the order's answer when clears, else refused from the released
// list), sent to the line again.
func walkThroughProxy(t *testing.T, f *fixture, shop *recordedShop, base string, clears bool) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(method, uri string, header ...string) (*http.Response, string) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader("product=1")
		}
		req, _ := http.NewRequest(method, base+uri, body)
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header[header[i]] = append(req.Header[header[i]], header[i+1]) // as spelled
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	toLine := func(when string, header ...string) *http.Response {
		t.Helper()
		resp, _ := get(http.MethodGet, "/product/1?ref=mail", header...)
		want := room + "?event=" + event + "&returnTo=" + url.QueryEscape(base+"/product/1?ref=mail")
		if loc := resp.Header.Get("Location"); resp.StatusCode != 302 || loc != want {
			t.Fatalf("%s: %d, Location %q, want %q", when, resp.StatusCode, loc, want)
		}
		return resp
	}

	// Unadmitted: the waiting room; an API call 401; the shop sees nothing.
	toLine("unadmitted")
	// Nor with the headers that describe the request to the guard forged:
	// the proxy sets its own (the guard's returnTo names the proxy's host),
	// and what it passes on under the other name never decides.
	forged := [][]string{
		{guard.OriginalURIHeader, "/static/shop.css"},
		{guard.ForwardedURIHeader, "/static/shop.css"},
		{guard.OriginalURIHeader, "/static/shop.css", guard.ForwardedURIHeader, "/static/shop.css", guard.ForwardedMethodHeader, http.MethodHead},
		{guard.ForwardedHostHeader, "evil.example", guard.ForwardedProtoHeader, "https"},
	}
	for _, h := range forged {
		toLine(fmt.Sprintf("unadmitted with %q", h), h...)
		if _, n := shop.last(); n != 0 {
			t.Fatalf("unadmitted with %q: the shop got %d requests", h, n)
		}
	}
	resp, body := get(http.MethodGet, "/product/1", "Accept", "application/json")
	if resp.StatusCode != 401 || !strings.Contains(body, `"entry_required"`) || !strings.Contains(body, url.QueryEscape(base+"/product/1")) {
		t.Fatalf("API call: %d %s", resp.StatusCode, body)
	}
	if _, n := shop.last(); n != 0 {
		t.Fatalf("the shop got %d unadmitted requests", n)
	}
	// Bypassed: the shop's stylesheet, with no user, forged or not, in no
	// spelling.
	var spellings []string
	for _, name := range underscoredIdentity {
		spellings = append(spellings, name, "mallory")
	}
	resp, _ = get(http.MethodGet, "/static/shop.css", append([]string{guard.UserHeader, "mallory"}, spellings...)...)
	if got, _ := shop.last(); resp.StatusCode != 200 || got.user != "" || len(got.forged) != 0 {
		t.Fatalf("bypassed: %d, the shop got user %q and %q", resp.StatusCode, got.user, got.forged)
	}

	// Arrival: the cookie, then the same address without the token.
	tok := f.token("alice")
	resp, _ = get(http.MethodGet, "/product/1?waitq_token="+tok+"&ref=mail")
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != 302 || err != nil || loc.RequestURI() != "/product/1?ref=mail" || (loc.Host != "" && base != "http://"+loc.Host) {
		t.Fatalf("arrival: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Admitted: the page, the user named to the shop (a forged name dropped),
	// no token in the address.
	resp, body = get(http.MethodGet, "/product/1?ref=mail", append([]string{guard.UserHeader, "mallory"}, spellings...)...)
	got, _ := shop.last()
	if resp.StatusCode != 200 || !strings.Contains(body, "signed in through the waiting room as alice") ||
		got.user != "alice" || got.uri != "/product/1?ref=mail" || len(got.forged) != 0 {
		t.Fatalf("admitted: %d, the shop got %+v", resp.StatusCode, got)
	}
	// A Connection header naming the guard's headers (hop-by-hop to a
	// proxy) must not make them vanish on the way to the shop: the request
	// reaches the shop with the user, or is refused (Caddy, 400).
	resp, _ = get(http.MethodGet, "/product/3", "Connection", guard.UserHeader+", "+guard.ExpiresHeader)
	switch got, _ := shop.last(); {
	case resp.StatusCode == http.StatusBadRequest && got.uri != "/product/3":
	case resp.StatusCode != 200 || got.user != "alice" || got.uri != "/product/3":
		t.Fatalf("admitted, Connection naming the identity: %d, the shop got %+v", resp.StatusCode, got)
	}
	// Never an open redirect: the arrival stays on the proxy's host.
	for _, uri := range []string{"//evil.example/x", "/%2F%2Fevil.example/x", "/%5Cevil.example/x"} {
		resp, _ := get(http.MethodGet, uri+"?waitq_token="+tok)
		l := resp.Header.Get("Location")
		u, err := url.Parse(l)
		if resp.StatusCode != 302 || err != nil || (u.Host != "" && "http://"+u.Host != base) || strings.HasPrefix(l, "//") || strings.HasPrefix(l, "/\\") {
			t.Errorf("%s: %d, Location %q", uri, resp.StatusCode, l)
		}
	}

	// Ordering ends the visit: the order reaches the shop with the user,
	// the slot is released, the cookie cleared.
	// The forged headers cannot make it another request: it releases.
	resp, body = get(http.MethodPost, "/order", guard.OriginalURIHeader, "/static/shop.css", guard.ForwardedURIHeader, "/cart",
		guard.ForwardedMethodHeader, http.MethodGet)
	if got, _ := shop.last(); resp.StatusCode != 200 || !strings.Contains(body, "Thank you, alice") || got.user != "alice" {
		t.Fatalf("order: %d %s, the shop got %+v", resp.StatusCode, body, got)
	}
	cleared := len(resp.Cookies()) == 1 && resp.Cookies()[0].MaxAge < 0
	if cleared != clears {
		t.Fatalf("order: the cookie cleared %v, want %v (Set-Cookie %q)", cleared, clears, resp.Header.Values("Set-Cookie"))
	}
	select {
	case released := <-f.releases:
		if released != tok {
			t.Fatalf("released %q, want the visitor's token", released)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no release after the order")
	}
	if !clears {
		// The cookie still passes until the guard's poll lists the
		// release; then it is refused, and that answer clears it.
		testenv.Eventually(t, 5*time.Second, func() (bool, string) {
			resp, _ := get(http.MethodHead, "/cart")
			return resp.StatusCode == 302, resp.Status
		})
		if c := jar.Cookies(&url.URL{Scheme: "http", Host: strings.TrimPrefix(base, "http://")}); len(c) != 0 {
			t.Fatalf("the refused cookie stays: %v", c)
		}
	}
	toLine("released")
}

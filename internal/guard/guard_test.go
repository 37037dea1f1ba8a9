package guard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/testkit/contract"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/pkg/entry"
)

const (
	event = "shop-sale"
	room  = "https://queue.example.com/"
)

// seen is what the origin got with one request.
type seen struct {
	uri, cookie, user, expires, forwardedHost, token string
	header                                           http.Header
}

// slowPage is how long the origin takes on /slow.
const slowPage = 60 * time.Millisecond

// origin is the protected site: it records what it gets and answers 200
// "origin", or 503 on /boom, after slowPage on /slow, and never on /hang
// (it tells hung and waits for the request's end).
type origin struct {
	*httptest.Server
	mu   sync.Mutex
	got  []seen
	hits int
	hung chan struct{}
}

func newOrigin(t *testing.T) *origin {
	o := &origin{hung: make(chan struct{}, 10)}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.got = append(o.got, seen{r.URL.RequestURI(), r.Header.Get("Cookie"), r.Header.Get(guard.UserHeader),
			r.Header.Get(guard.ExpiresHeader), r.Header.Get("X-Forwarded-Host"), r.Header.Get(guard.TokenHeader), r.Header.Clone()})
		o.mu.Unlock()
		switch r.URL.Path {
		case "/boom":
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		case "/slow":
			time.Sleep(slowPage)
		case "/hang":
			o.hung <- struct{}{}
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "origin")
	}))
	t.Cleanup(o.Close)
	return o
}

// last returns what the origin got last and how many requests it got.
func (o *origin) last() (seen, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.got) == 0 {
		return seen{}, 0
	}
	return o.got[len(o.got)-1], len(o.got)
}

// fixture is a guard in front of an origin, with the gateway's JWKS and
// release route.
type fixture struct {
	origin   *origin
	guard    *guard.Proxy
	srv      *httptest.Server
	client   *http.Client // follows no redirect
	keys     *entry.Keyring
	releases chan string
	arrivals chan string     // the tokens reported arrived with testReportToken
	logs     *testenv.Buffer // the guard's log, shown when the test fails

	mu       sync.Mutex
	released []entry.Token // what the gateway lists at /released
}

func newFixture(t *testing.T, mod func(*guard.Config)) *fixture {
	t.Helper()
	k, err := entry.NewKeyring("k1", []byte(strings.Repeat("s", 32)), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{origin: newOrigin(t), keys: k, releases: make(chan string, 10), arrivals: make(chan string, 10), logs: &testenv.Buffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the guard's log:\n%s", f.logs.String())
		}
	})
	gw := httptest.NewServer(contract.Gateway(t).Handler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/jwks.json":
			w.Header().Set("Content-Type", "application/jwk-set+json")
			w.Header().Set("Cache-Control", "public, max-age=300")
			w.Write(k.JWKS())
		case "/v1/events/" + event + "/release":
			var b struct{ Token string }
			_ = json.NewDecoder(r.Body).Decode(&b)
			if tok, err := k.Verify(b.Token, event, time.Now()); err == nil {
				f.mu.Lock()
				f.released = append(f.released, tok)
				f.mu.Unlock()
			}
			f.releases <- b.Token
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"released":true}`)
		case "/v1/events/" + event + "/arrivals":
			var b struct{ Token string }
			_ = json.NewDecoder(r.Body).Decode(&b)
			w.Header().Set("Content-Type", "application/json")
			if r.Header.Get("Authorization") != "Bearer "+testReportToken {
				w.Header().Set("WWW-Authenticate", `Bearer realm="waitq-admin"`)
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"error":{"code":"unauthorized","message":"the report token is required"}}`)
				return
			}
			f.arrivals <- b.Token
			io.WriteString(w, `{"arrived":true}`)
		case "/v1/events/" + event + "/released":
			type admission struct {
				JTI string `json:"jti"`
				Exp int64  `json:"exp"`
			}
			l := []admission{}
			f.mu.Lock()
			for _, tok := range f.released {
				l = append(l, admission{tok.ID, tok.Expires / 1000})
			}
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"eventId": event, "released": l})
		default:
			http.NotFound(w, r)
		}
	})))
	t.Cleanup(gw.Close)
	cfg := guard.Config{
		OriginURL: f.origin.URL, EventID: event, WaitingRoomURL: room, GatewayURL: gw.URL,
		Bypass: guard.DefaultBypass,
	}
	if mod != nil {
		mod(&cfg)
	}
	keys := entry.NewKeySource(entry.KeySourceConfig{URL: gw.URL + "/.well-known/jwks.json"})
	f.guard, err = guard.New(cfg, guard.Deps{Keys: keys, Logger: slog.New(slog.NewTextHandler(f.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(contract.Guard(t).Handler(t, f.guard))
	t.Cleanup(f.srv.Close)
	f.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return f
}

// token signs an entry token of user for the event, held for an hour.
func (f *fixture) token(user string) string {
	return f.keys.Sign(entry.Token{EventID: event, UserID: user, Expires: time.Now().Add(time.Hour).UnixMilli(), IssuedAt: time.Now().UnixMilli()})
}

// do sends a request to the guard with the given Cookie header and headers.
func (f *fixture) do(t *testing.T, method, uri, cookie string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// metrics returns the guard's /metrics text.
func (f *fixture) metrics(t *testing.T) string {
	t.Helper()
	resp, body := f.do(t, http.MethodGet, guard.AdminPrefix+"metrics", "")
	if resp.StatusCode != 200 {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	return body
}

func wantMetric(t *testing.T, text, line string) {
	t.Helper()
	if !strings.Contains(text, "\n"+line+"\n") {
		t.Errorf("metrics lack %q", line)
	}
}

func TestAdmittedRequestReachesOriginWithoutToken(t *testing.T) {
	f := newFixture(t, nil)
	tok := f.token("alice")

	// Arrival from the waiting room: the token goes into the cookie.
	resp, _ := f.do(t, http.MethodGet, "/product/7?waitq_token="+tok+"&ref=mail", "")
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "/product/7?ref=mail" {
		t.Fatalf("arrival: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, n := f.origin.last(); n != 0 {
		t.Fatalf("the origin got the arrival with the token")
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || cookies[0].Name != "waitq_entry_"+event || cookies[0].Value != tok {
		t.Fatalf("Set-Cookie %q", resp.Header.Values("Set-Cookie"))
	}

	// The next request carries the cookie beside the site's own.
	resp, body := f.do(t, http.MethodGet, "/product/7?ref=mail", "theme=dark; waitq_entry_"+event+"="+tok+"; cart=3",
		guard.UserHeader, "mallory")
	got, n := f.origin.last()
	if resp.StatusCode != 200 || body != "origin" || n != 1 {
		t.Fatalf("admitted request: %d %q, origin hits %d", resp.StatusCode, body, n)
	}
	want := seen{uri: "/product/7?ref=mail", cookie: "theme=dark; cart=3", user: "alice", forwardedHost: strings.TrimPrefix(f.srv.URL, "http://")}
	if got.expires == "" || got.uri != want.uri || got.cookie != want.cookie || got.user != want.user || got.forwardedHost != want.forwardedHost {
		t.Fatalf("origin got %+v, want %+v", got, want)
	}
	if got.token != "" {
		t.Fatalf("the origin got the token without WAITQ_FORWARD_TOKEN: %+v", got)
	}

	// A POST with the token in the query goes on without it.
	resp, _ = f.do(t, http.MethodPost, "/cart?waitq_token="+tok+"&item=7", "")
	got, _ = f.origin.last()
	if resp.StatusCode != 200 || got.uri != "/cart?item=7" || got.cookie != "" || strings.Contains(got.uri, tok) {
		t.Fatalf("POST with the query token: %d, origin got %+v", resp.StatusCode, got)
	}
	m := f.metrics(t)
	wantMetric(t, m, `waitq_guard_requests_total{event="shop-sale",outcome="entered"} 2`)
	wantMetric(t, m, `waitq_guard_requests_total{event="shop-sale",outcome="passed"} 1`)
	wantMetric(t, m, `waitq_guard_origin_responses_total{code="2xx",event="shop-sale"} 2`)
}

// TestLegacyTokensPassAndAreCounted: during the upgrade an e2 token (the
// format before JWTs) signed with a served key still passes, and the guard
// counts it, so an operator sees when the last one is gone; a JWT is not
// counted.
func TestLegacyTokensPassAndAreCounted(t *testing.T) {
	f := newFixture(t, nil)
	legacy := testenv.LegacyEntryToken("k1", []byte(strings.Repeat("s", 32)), event, "bob", time.Now().Add(time.Hour).UnixMilli())
	for _, tok := range []string{legacy, f.token("alice")} {
		resp, body := f.do(t, http.MethodGet, "/product/7", "waitq_entry_"+event+"="+tok)
		if resp.StatusCode != 200 || body != "origin" {
			t.Fatalf("a request with %.12s…: %d %q", tok, resp.StatusCode, body)
		}
	}
	if got, _ := f.origin.last(); got.user != "alice" {
		t.Fatalf("the origin got %+v", got)
	}
	wantMetric(t, f.metrics(t), `waitq_guard_legacy_tokens_total{event="shop-sale"} 1`)
}

func TestUnadmittedRequestIsSentToTheLine(t *testing.T) {
	f := newFixture(t, nil)
	other, _ := entry.NewKeyring("k1", []byte(strings.Repeat("x", 32)), nil)
	forged := other.Sign(entry.Token{EventID: event, UserID: "mallory", Expires: time.Now().Add(time.Hour).UnixMilli()})
	for _, cookie := range []string{"", "waitq_entry_" + event + "=" + forged} {
		resp, _ := f.do(t, http.MethodGet, "/product/7?ref=mail", cookie)
		back := f.srv.URL + "/product/7?ref=mail"
		if loc := resp.Header.Get("Location"); resp.StatusCode != 302 || loc != room+"?event="+event+"&returnTo="+url.QueryEscape(back) {
			t.Fatalf("cookie %q: %d, Location %q", cookie, resp.StatusCode, loc)
		}
	}
	resp, body := f.do(t, http.MethodGet, "/api/cart", "", "Accept", "application/json")
	if resp.StatusCode != 401 || !strings.Contains(body, `"code":"entry_required"`) {
		t.Fatalf("API client: %d %s", resp.StatusCode, body)
	}
	if _, n := f.origin.last(); n != 0 {
		t.Fatalf("the origin got %d unadmitted requests", n)
	}
	m := f.metrics(t)
	wantMetric(t, m, `waitq_guard_requests_total{event="shop-sale",outcome="to_line"} 3`)
	wantMetric(t, m, `waitq_guard_refused_tokens_total{event="shop-sale",reason="missing"} 2`)
	wantMetric(t, m, `waitq_guard_refused_tokens_total{event="shop-sale",reason="signature"} 1`)
}

func TestBypassedPathsNeedNoToken(t *testing.T) {
	f := newFixture(t, func(c *guard.Config) { c.Protect = []string{"/product/", "/order", "/cart/*"} })
	for _, p := range []string{"/static/app.css", "/favicon.ico", "/", "/about"} {
		resp, body := f.do(t, http.MethodGet, p, "", guard.UserHeader, "mallory")
		got, _ := f.origin.last()
		if resp.StatusCode != 200 || body != "origin" || got.user != "" {
			t.Errorf("%s: %d %q, origin got user %q", p, resp.StatusCode, body, got.user)
		}
	}
	// Paths the origin could resolve elsewhere are always guarded.
	for _, p := range []string{"/product/7", "/order", "/cart/3", "/static/../order", "/static//../order", "/about/../order", "/product/../about",
		// What servlet containers, IIS or a second decoding read as "/order".
		"/static/..;/order", "/static/..;jsessionid=1/order", "/static/..%3B/order", "/static/..\\order", "/static/..%5Corder", "/static/%5C..%5Corder",
		"/static/%252e%252e/order", "/static/%2e%2e/order", "/static/..%2Forder", "/static/%09/../order",
		// Protected patterns ignore case; bypass patterns do not.
		"/PRODUCT/7", "/Order", "/CART/3", "/STATIC/../order", "/Static/app.css/../../order",
	} {
		if resp, _ := f.do(t, http.MethodGet, p, ""); resp.StatusCode != 302 {
			t.Errorf("%s: %d, want 302 to the line", p, resp.StatusCode)
		}
	}
	wantMetric(t, f.metrics(t), `waitq_guard_requests_total{event="shop-sale",outcome="bypassed"} 4`)
}

func TestOriginFailuresAreCounted(t *testing.T) {
	f := newFixture(t, nil)
	cookie := "waitq_entry_" + event + "=" + f.token("alice")
	if resp, _ := f.do(t, http.MethodGet, "/boom", cookie); resp.StatusCode != 503 {
		t.Fatalf("origin 503 passed on as %d", resp.StatusCode)
	}
	f.origin.Close()
	if resp, _ := f.do(t, http.MethodGet, "/product/1", cookie); resp.StatusCode != 502 {
		t.Fatalf("origin down: %d, want 502", resp.StatusCode)
	}
	m := f.metrics(t)
	wantMetric(t, m, `waitq_guard_origin_responses_total{code="5xx",event="shop-sale"} 1`)
	wantMetric(t, m, `waitq_guard_origin_responses_total{code="error",event="shop-sale"} 1`)
	wantMetric(t, m, `waitq_guard_origin_seconds_count{event="shop-sale"} 2`)
	if h := f.guard.Health(time.Now()); *h.Requests != 2 || *h.ErrorRate != 1 {
		t.Fatalf("health: %d requests, error rate %v; want 2 failed", *h.Requests, *h.ErrorRate)
	}
}

func TestDonePathReleasesTheSlot(t *testing.T) {
	f := newFixture(t, func(c *guard.Config) { c.DonePath = "/order" })
	tok := f.token("alice")
	resp, body := f.do(t, http.MethodPost, "/order", "waitq_entry_"+event+"="+tok)
	if resp.StatusCode != 200 || body != "origin" {
		t.Fatalf("order: %d %q", resp.StatusCode, body)
	}
	if c := resp.Cookies(); len(c) != 1 || c[0].Value != "" || c[0].MaxAge >= 0 {
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
	wantMetric(t, f.metrics(t), `waitq_guard_releases_total{event="shop-sale",result="released"} 1`)
}

func TestReadiness(t *testing.T) {
	f := newFixture(t, nil)
	resp, body := f.do(t, http.MethodGet, guard.AdminPrefix+"readyz", "")
	if resp.StatusCode != 200 || !strings.Contains(body, `"ready"`) {
		t.Fatalf("readyz: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.do(t, http.MethodGet, guard.AdminPrefix+"healthz", ""); resp.StatusCode != 200 {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
	if resp, body := f.do(t, http.MethodGet, guard.AdminPrefix+"openapi.yaml", ""); resp.StatusCode != 200 || body != string(guard.OpenAPI) {
		t.Fatalf("openapi.yaml: %d, %d bytes", resp.StatusCode, len(body))
	}
	if _, n := f.origin.last(); n != 0 {
		t.Fatal("the guard's own routes reached the origin")
	}

	down := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(down.Close)
	cfg := guard.Config{OriginURL: f.origin.URL, EventID: event, WaitingRoomURL: room, GatewayURL: down.URL}
	g, err := guard.New(cfg, guard.Deps{Keys: entry.NewKeySource(entry.KeySourceConfig{URL: cfg.KeysURL()})})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Ready(context.Background()); err == nil {
		t.Fatal("ready without keys")
	}
}

func TestParsePaths(t *testing.T) {
	p, err := guard.ParsePaths([]string{"/static/", "/favicon.ico", "/*.css", "/product/[0-9]*"})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		"/static/a/b.js": true, "/static": false, "/favicon.ico": true, "/favicon.ico/x": false,
		"/site.css": true, "/a/site.css": false, "/product/12": true, "/product/x": false,
	} {
		if got := p.Match(path); got != want {
			t.Errorf("Match(%q) = %v", path, got)
		}
	}
	// Covers reads both the way an origin may (entry.PathKey): "/cart" is
	// "/cart/", which "/cart/*" matches.
	p, _ = guard.ParsePaths([]string{"/checkout", "/admin/", "/cart/*"})
	for path, want := range map[string]bool{
		"/checkout": true, "/checkout/": true, "/CHECKOUT": true, "/Checkout/": true, "/checkout;x=1": true, "//checkout": true,
		"/a/../checkout": true, "/checkout.": true, "/admin": true, "/ADMIN/": true, "/admin/x": true, "/cart/": true, "/cart/3": true, "/CART/3/": true,
		"/checkouts": false, "/checkout/x": false, "/administrator": false, "/cart": true, "/cart/3/4": false, "/": false,
	} {
		if got := p.Covers(path); got != want {
			t.Errorf("Covers(%q) = %v", path, got)
		}
	}
	for _, bad := range []string{"static/", "/[", ""} {
		if _, err := guard.ParsePaths([]string{bad}); err == nil {
			t.Errorf("ParsePaths(%q) accepted", bad)
		}
	}
}

// TestExactProtectCoversVariants: an exact protect pattern guards every
// path an origin may serve as it ("/checkout/" is "/checkout" to many
// frameworks), a prefix pattern its bare directory; other paths stay
// unguarded.
func TestExactProtectCoversVariants(t *testing.T) {
	f := newFixture(t, func(c *guard.Config) { c.Protect = []string{"/checkout", "/admin/"} })
	for _, p := range []string{"/checkout", "/checkout/", "/CHECKOUT", "/Checkout/", "/checkout;x=1", "/checkout/.", "/admin", "/ADMIN/"} {
		if resp, _ := f.do(t, http.MethodGet, p, ""); resp.StatusCode != 302 {
			t.Errorf("%s: %d, want 302 to the line", p, resp.StatusCode)
		}
	}
	if _, n := f.origin.last(); n != 0 {
		t.Fatalf("the origin got %d requests without a token", n)
	}
	for _, p := range []string{"/checkouts", "/checkout/done", "/about", "/administrator"} {
		if resp, body := f.do(t, http.MethodGet, p, ""); resp.StatusCode != 200 || body != "origin" {
			t.Errorf("%s: %d %q, want the origin", p, resp.StatusCode, body)
		}
	}
}

// TestIdentityHeadersSurviveConnection sends an admitted request whose
// Connection header names the guard's identity headers: hop-by-hop
// handling must not remove what the guard sets for the origin.
func TestIdentityHeadersSurviveConnection(t *testing.T) {
	f := newFixture(t, nil)
	cookie := "waitq_entry_" + event + "=" + f.token("alice")
	resp, _ := f.do(t, http.MethodGet, "/product/7", cookie, "Connection", "X-Waitq-User-Id, X-Waitq-Expires", guard.UserHeader, "mallory")
	got, n := f.origin.last()
	if resp.StatusCode != 200 || n != 1 || got.user != "alice" || got.expires == "" {
		t.Fatalf("%d, origin hits %d, got %+v: want user alice with an expiry", resp.StatusCode, n, got)
	}
	// On a bypassed path the client's own identity headers never pass.
	resp, _ = f.do(t, http.MethodGet, "/static/app.css", "", "Connection", "X-Other", guard.UserHeader, "mallory", guard.ExpiresHeader, "1")
	if got, _ = f.origin.last(); resp.StatusCode != 200 || got.user != "" || got.expires != "" {
		t.Fatalf("bypassed: %d, origin got %+v", resp.StatusCode, got)
	}
}

// underscoredIdentity are spellings of the guard's headers that CGI, WSGI
// and PHP origins read as the real ones (HTTP_X_WAITQ_USER_ID).
var underscoredIdentity = []string{"X_Waitq_User_Id", "x-waitq_user-id", "X-WAITQ-USER_ID", "x_waitq_expires", "X-Waitq_Token"}

// identitySpellings returns the headers of h, other than the guard's own
// spelling, whose name holds "waitq".
func identitySpellings(h http.Header) []string {
	var got []string
	for name, v := range h {
		if strings.Contains(strings.ToLower(name), "waitq") && name != guard.UserHeader && name != guard.ExpiresHeader && name != guard.TokenHeader {
			got = append(got, name+": "+strings.Join(v, ","))
		}
	}
	return got
}

// TestIdentityHeaderSpellingsNeverPass: a client's X_Waitq_User_Id (or any
// spelling that folds to a header the guard sets) never reaches the origin,
// on a guarded path or a bypassed one.
func TestIdentityHeaderSpellingsNeverPass(t *testing.T) {
	f := newFixture(t, func(c *guard.Config) { c.ForwardToken = true })
	cookie := "waitq_entry_" + event + "=" + f.token("alice")
	for _, p := range []struct{ path, cookie, user string }{{"/product/7", cookie, "alice"}, {"/static/app.css", "", ""}} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+p.path, nil)
		if p.cookie != "" {
			req.Header.Set("Cookie", p.cookie)
		}
		for _, name := range underscoredIdentity {
			req.Header[name] = []string{"admin"}
		}
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got, _ := f.origin.last()
		if resp.StatusCode != 200 || got.user != p.user || len(identitySpellings(got.header)) != 0 {
			t.Errorf("%s: %d, the origin got user %q and %q", p.path, resp.StatusCode, got.user, identitySpellings(got.header))
		}
	}
}

// TestForwardToken: with ForwardToken the origin gets the verified entry
// token in X-Waitq-Token (for seat holds), and a client's own header is
// never passed on, with the setting or without, admitted or bypassed.
func TestForwardToken(t *testing.T) {
	for _, forward := range []bool{true, false} {
		f := newFixture(t, func(c *guard.Config) { c.ForwardToken = forward })
		tok := f.token("alice")
		f.do(t, http.MethodGet, "/product/7", "waitq_entry_"+event+"="+tok, guard.TokenHeader, "forged")
		got, _ := f.origin.last()
		if want := map[bool]string{true: tok, false: ""}[forward]; got.token != want || got.user != "alice" {
			t.Errorf("forward %v: the origin got token %q, want %q", forward, got.token, want)
		}
		f.do(t, http.MethodGet, "/healthz", "", guard.TokenHeader, "forged")
		if got, _ := f.origin.last(); got.token != "" {
			t.Errorf("forward %v: a bypassed path passed the client's token header %q", forward, got.token)
		}
	}
}

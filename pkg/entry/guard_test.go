package entry_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/pkg/entry"
)

const (
	room  = "https://queue.example.com/"
	event = "sale1"
)

// jwksServer is the gateway's /.well-known/jwks.json: it serves the keys it
// was last given and counts its fetches.
type jwksServer struct {
	*httptest.Server
	body    atomic.Pointer[[]byte]
	down    atomic.Bool // answer 503
	fetches atomic.Int64
}

func newJWKSServer(t *testing.T, k *entry.Keyring) *jwksServer {
	t.Helper()
	s := &jwksServer{}
	s.serve(k)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		if s.down.Load() || r.URL.Path != "/.well-known/jwks.json" {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Write(*s.body.Load())
	}))
	t.Cleanup(s.Close)
	return s
}

// serve makes the server answer with k's keys from now on.
func (s *jwksServer) serve(k *entry.Keyring) {
	b := k.JWKS()
	s.body.Store(&b)
}

// fixture is a Guard in front of a handler that answers 200 "origin" (or
// status, when set), with the gateway's keys served by jwks, and a clock
// the test moves.
type fixture struct {
	jwks    *jwksServer
	keys    *entry.KeySource
	guard   *entry.Guard
	clock   atomic.Int64 // unix ms
	reached atomic.Int64 // requests the handler got
	status  int
	seen    struct {
		sync.Mutex
		url, user string
	}
	decisions chan entry.Decision
}

// newFixture starts the gateway's JWKS with k1's keys, fetches them at the
// fixture's start and moves the clock a minute on, so an unknown key id may
// refresh them at once.
func newFixture(t *testing.T, k1 *entry.Keyring, mod func(*entry.GuardConfig)) *fixture {
	t.Helper()
	f := &fixture{jwks: newJWKSServer(t, k1), status: http.StatusOK, decisions: make(chan entry.Decision, 1000)}
	f.clock.Store(now.UnixMilli())
	clock := func() time.Time { return time.UnixMilli(f.clock.Load()) }
	f.keys = entry.NewKeySource(entry.KeySourceConfig{URL: f.jwks.URL + "/.well-known/jwks.json", Client: f.jwks.Client(), Now: clock})
	if err := f.keys.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(time.Minute.Milliseconds())
	cfg := entry.GuardConfig{
		EventID: event, WaitingRoomURL: room, Keys: f.keys, Now: clock, Logger: testenv.Logger(t),
		Observe: func(_ *http.Request, d entry.Decision) { f.decisions <- d },
	}
	if mod != nil {
		mod(&cfg)
	}
	g, err := entry.NewGuard(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.guard = g
	return f
}

func (f *fixture) handler() http.Handler {
	return f.guard.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.reached.Add(1)
		tok, raw, ok := entry.TokenFromContext(r.Context())
		f.seen.Lock()
		f.seen.url, f.seen.user = r.URL.RequestURI(), tok.UserID
		f.seen.Unlock()
		if !ok || raw == "" {
			http.Error(w, "no token in the context", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(f.status)
		io.WriteString(w, "origin")
	}))
}

// do sends a request through the guard.
func (f *fixture) do(method, target, cookie, accept string) *http.Response {
	req := httptest.NewRequest(method, target, nil)
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "waitq_entry_" + event, Value: cookie})
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	f.handler().ServeHTTP(rec, req)
	return rec.Result()
}

// roomFor is the redirect target of a refused request for back.
func roomFor(back string) string {
	return room + "?event=" + event + "&returnTo=" + url.QueryEscape(back)
}

// claims returns an entry token's claims for user in ev, held for hold
// from the test's clock start.
func claims(ev, user string, hold time.Duration) entry.Token {
	return entry.Token{EventID: ev, UserID: user, Expires: now.Add(hold).UnixMilli(), IssuedAt: now.UnixMilli()}
}

func TestGuard(t *testing.T) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	impostor, _ := entry.NewKeyring("k1", seed(3), nil)
	pub1 := map[string]ed25519.PublicKey{"k1": ed25519.NewKeyFromSeed(seed(1)).Public().(ed25519.PublicKey)}
	k2, _ := entry.NewKeyring("k2", seed(2), pub1) // the gateway after a rotation
	valid := k1.Sign(claims(event, "alice", 10*time.Minute))
	holdEnd := time.UnixMilli(claims(event, "alice", 10*time.Minute).Expires)

	const page = "http://shop.example/product/7?color=red"
	type cookieWant int
	const (
		noCookie cookieWant = iota
		setCookie
		clearCookie
	)
	tests := []struct {
		name           string
		method, target string
		cookie, accept string
		before         func(f *fixture)
		status         int
		location       string
		cookieWant     cookieWant
		outcome        entry.Outcome
		queryReason    string
		cookieReason   string
		origin         string // URL the handler saw, when it was reached
	}{
		{name: "valid cookie", target: page, cookie: valid, status: 200, outcome: entry.Passed, origin: "/product/7?color=red"},
		{
			name: "valid query token moves into the cookie", target: "http://shop.example/product/7?color=red&waitq_token=" + valid + "&size=m",
			status: 302, location: "/product/7?color=red&size=m", cookieWant: setCookie, outcome: entry.Entered,
		},
		{
			name: "valid query token on a POST goes on without the parameter", method: http.MethodPost, target: "http://shop.example/order?waitq_token=" + valid,
			status: 200, cookieWant: setCookie, outcome: entry.Entered, origin: "/order",
		},
		{name: "no token", target: page, status: 302, location: roomFor(page), outcome: entry.SentToLine},
		{name: "no token over TLS", target: "https://shop.example/", status: 302, location: roomFor("https://shop.example/"), outcome: entry.SentToLine},
		{
			name: "expired cookie", target: page, cookie: valid, before: func(f *fixture) { f.clock.Store(holdEnd.Add(3 * time.Second).UnixMilli()) },
			status: 302, location: roomFor(page), cookieWant: clearCookie, outcome: entry.SentToLine, cookieReason: "expired",
		},
		{
			name: "another event's token", target: page, cookie: k1.Sign(claims("sale2", "alice", 10*time.Minute)),
			status: 302, location: roomFor(page), cookieWant: clearCookie, outcome: entry.SentToLine, cookieReason: "other_event",
		},
		{
			name: "forged signature", target: page, cookie: impostor.Sign(claims(event, "mallory", 10*time.Minute)),
			status: 302, location: roomFor(page), cookieWant: clearCookie, outcome: entry.SentToLine, cookieReason: "signature",
		},
		{
			name: "malformed cookie", target: page, cookie: "e2.k1.garbage",
			status: 302, location: roomFor(page), cookieWant: clearCookie, outcome: entry.SentToLine, cookieReason: "malformed",
		},
		{
			name: "unknown key id the gateway does not serve", target: page, cookie: k2.Sign(claims(event, "bob", 10*time.Minute)),
			status: 302, location: roomFor(page), cookieWant: clearCookie, outcome: entry.SentToLine, cookieReason: "unknown_key",
		},
		{
			name: "unknown key id after a rotation: the JWKS is fetched again", target: page, cookie: k2.Sign(claims(event, "bob", 10*time.Minute)),
			before: func(f *fixture) { f.jwks.serve(k2) },
			status: 200, outcome: entry.Passed, origin: "/product/7?color=red",
		},
		{
			name: "invalid query token: sent to the line without it", target: "http://shop.example/product/7?waitq_token=e2.x&color=red",
			status: 302, location: roomFor(page), outcome: entry.SentToLine, queryReason: "malformed",
		},
		{
			name: "invalid query token but a valid cookie", target: "http://shop.example/product/7?waitq_token=e2.x&color=red", cookie: valid,
			status: 200, outcome: entry.Passed, queryReason: "malformed", origin: "/product/7?color=red",
		},
		{
			name: "an API client gets 401 JSON", target: page, accept: "application/json",
			status: 401, outcome: entry.SentToLine,
		},
		{
			name: "an API client with a forged cookie gets 401 JSON and the cookie cleared", target: page, accept: "application/json, text/plain, */*",
			cookie: impostor.Sign(claims(event, "mallory", 10*time.Minute)), status: 401, cookieWant: clearCookie, outcome: entry.SentToLine, cookieReason: "signature",
		},
		{
			name: "keys never fetched: 503, not a loop through the waiting room", target: page, cookie: valid,
			before: func(f *fixture) {
				f.jwks.down.Store(true)
				f.keys = entry.NewKeySource(entry.KeySourceConfig{URL: f.jwks.URL + "/.well-known/jwks.json", Client: f.jwks.Client()})
				f.guard, _ = entry.NewGuard(entry.GuardConfig{EventID: event, WaitingRoomURL: room, Keys: f.keys,
					Now: func() time.Time { return now }, Observe: func(_ *http.Request, d entry.Decision) { f.decisions <- d }})
			},
			status: 503, outcome: entry.Unavailable, cookieReason: "keys_unavailable",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, k1, nil)
			if tc.before != nil {
				tc.before(f)
			}
			resp := f.do(cmpOr(tc.method, http.MethodGet), tc.target, tc.cookie, tc.accept)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.status, body)
			}
			if got := resp.Header.Get("Location"); got != tc.location {
				t.Errorf("Location\n got %q\nwant %q", got, tc.location)
			}
			if tc.status != 200 && resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q on the guard's own answer", resp.Header.Get("Cache-Control"))
			}
			checkCookies(t, resp, tc.cookieWant == setCookie, tc.cookieWant == clearCookie, valid, holdEnd)
			d := <-f.decisions
			if d.Outcome != tc.outcome || entry.Reason(d.QueryErr) != tc.queryReason || entry.Reason(d.CookieErr) != tc.cookieReason {
				t.Errorf("decision %v query %q cookie %q, want %v %q %q", d.Outcome, entry.Reason(d.QueryErr), entry.Reason(d.CookieErr),
					tc.outcome, tc.queryReason, tc.cookieReason)
			}
			if got := f.reached.Load() == 1; got != (tc.origin != "") {
				t.Fatalf("handler reached: %v", got)
			}
			if tc.origin != "" {
				if f.seen.url != tc.origin || string(body) != "origin" {
					t.Errorf("handler saw %q and answered %q, want %q", f.seen.url, body, tc.origin)
				}
				if f.seen.user == "" {
					t.Error("the token's claims are not in the request's context")
				}
			}
			if tc.status == 401 {
				var b struct{ Code, Message, WaitingRoom string }
				if err := json.Unmarshal(body, &b); err != nil || b.Code != "entry_required" || b.Message == "" || b.WaitingRoom != roomFor(page) {
					t.Errorf("401 body %s (%v)", body, err)
				}
			}
		})
	}
}

// checkCookies asserts the Set-Cookie headers: the token's cookie with its
// attributes, the cookie cleared, or none.
func checkCookies(t *testing.T, resp *http.Response, set, clear bool, token string, holdEnd time.Time) {
	t.Helper()
	cs := resp.Cookies()
	if !set && !clear {
		if len(cs) != 0 {
			t.Errorf("Set-Cookie %q, want none", resp.Header.Values("Set-Cookie"))
		}
		return
	}
	if len(cs) != 1 {
		t.Fatalf("Set-Cookie %q, want one", resp.Header.Values("Set-Cookie"))
	}
	c := cs[0]
	if c.Name != "waitq_entry_"+event || c.Path != "/" || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode {
		t.Errorf("cookie attributes: %s", resp.Header.Get("Set-Cookie"))
	}
	if set && (c.Value != token || !c.Expires.Equal(holdEnd.Truncate(time.Second)) || c.MaxAge != 0) {
		t.Errorf("cookie %s: want the token until %s", resp.Header.Get("Set-Cookie"), holdEnd.UTC())
	}
	if clear && (c.Value != "" || c.MaxAge >= 0) {
		t.Errorf("cookie %s: want it cleared", resp.Header.Get("Set-Cookie"))
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestGuardCookieSettings: the name, path and Secure flag follow the
// configuration, and the scheme of returnTo follows X-Forwarded-Proto only
// when trusted.
func TestGuardCookieSettings(t *testing.T) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	tok := k1.Sign(claims(event, "alice", time.Minute))
	f := newFixture(t, k1, func(c *entry.GuardConfig) {
		c.CookieName, c.CookiePath, c.CookieInsecure, c.TrustForwardedProto = "entry", "/shop", true, true
		c.WaitingRoomURL = "http://127.0.0.1:8081/?lang=en"
	})
	resp := f.do(http.MethodGet, "http://shop.example/shop/?waitq_token="+tok, "", "")
	set := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != 302 || !strings.HasPrefix(set, "entry="+tok+"; Path=/shop; Expires=") || strings.Contains(set, "Secure") {
		t.Fatalf("status %d, Set-Cookie %q", resp.StatusCode, set)
	}
	req := httptest.NewRequest(http.MethodGet, "http://shop.example/shop/cart", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	if got, want := f.guard.RoomURL(req), "http://127.0.0.1:8081/?lang=en&event=sale1&returnTo="+url.QueryEscape("https://shop.example/shop/cart"); got != want {
		t.Errorf("RoomURL\n got %s\nwant %s", got, want)
	}
	untrusting := newFixture(t, k1, nil)
	if got := untrusting.guard.RoomURL(req); !strings.HasSuffix(got, url.QueryEscape("http://shop.example/shop/cart")) {
		t.Errorf("X-Forwarded-Proto trusted by default: %s", got)
	}
}

// TestGuardRefreshIsRateLimited: tokens with made-up key ids make the
// source fetch the JWKS at most once per minimum interval, however many
// arrive at once.
func TestGuardRefreshIsRateLimited(t *testing.T) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	f := newFixture(t, k1, nil)
	before := f.jwks.fetches.Load()
	burst := func() {
		var wg sync.WaitGroup
		for i := range 100 {
			forger, _ := entry.NewKeyring("forged"+strconv.Itoa(i), seed(4), nil)
			tok := forger.Sign(claims(event, "mallory", time.Minute))
			wg.Go(func() {
				if resp := f.do(http.MethodGet, "http://shop.example/", tok, ""); resp.StatusCode != 302 {
					t.Errorf("forged key id: status %d", resp.StatusCode)
				}
			})
		}
		wg.Wait()
	}
	burst()
	if n := f.jwks.fetches.Load() - before; n != 1 {
		t.Fatalf("100 unknown key ids at once: %d fetches, want 1", n)
	}
	f.clock.Add((entry.DefaultMinRefresh - time.Second).Milliseconds())
	burst()
	if n := f.jwks.fetches.Load() - before; n != 1 {
		t.Fatalf("within the minimum interval: %d fetches, want 1", n)
	}
	f.clock.Add(time.Second.Milliseconds())
	burst()
	if n := f.jwks.fetches.Load() - before; n != 2 {
		t.Fatalf("after the minimum interval: %d fetches, want 2", n)
	}
	// Valid tokens never wait for a fetch.
	if resp := f.do(http.MethodGet, "http://shop.example/", k1.Sign(claims(event, "alice", time.Hour)), ""); resp.StatusCode != 200 {
		t.Fatalf("valid token after the burst: %d", resp.StatusCode)
	}
	if n := f.jwks.fetches.Load() - before; n != 2 {
		t.Fatalf("a known key fetched: %d", n)
	}
}

// TestGuardCache: a cookie seen before passes from the cache, but still
// ends at its expiry and once its key leaves the JWKS.
func TestGuardCache(t *testing.T) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	pub1 := map[string]ed25519.PublicKey{"k1": ed25519.NewKeyFromSeed(seed(1)).Public().(ed25519.PublicKey)}
	k2, _ := entry.NewKeyring("k2", seed(2), pub1)
	f := newFixture(t, k1, nil)
	tok := k1.Sign(claims(event, "alice", 2*time.Minute))
	for range 3 {
		if resp := f.do(http.MethodGet, "http://shop.example/", tok, ""); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	f.clock.Store(now.Add(2*time.Minute + 2*time.Second).UnixMilli())
	if resp := f.do(http.MethodGet, "http://shop.example/", tok, ""); resp.StatusCode != 302 {
		t.Fatalf("a cached token past its hold (and skew): status %d", resp.StatusCode)
	}

	// Rotation: the gateway first serves both keys, then drops the old one.
	f = newFixture(t, k1, nil)
	f.do(http.MethodGet, "http://shop.example/", tok, "")
	f.jwks.serve(k2)
	if err := f.keys.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp := f.do(http.MethodGet, "http://shop.example/", tok, ""); resp.StatusCode != 200 {
		t.Fatalf("old key during the overlap: status %d", resp.StatusCode)
	}
	later, _ := entry.NewKeyring("k2", seed(2), nil)
	f.jwks.serve(later)
	if err := f.keys.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp := f.do(http.MethodGet, "http://shop.example/", tok, ""); resp.StatusCode != 302 {
		t.Fatalf("a cached token of a dropped key: status %d", resp.StatusCode)
	}
}

// TestGuardCacheBound: far more tokens than the cache holds all pass, and
// each still passes when seen again after the cache was emptied around it.
func TestGuardCacheBound(t *testing.T) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	f := newFixture(t, k1, func(c *entry.GuardConfig) { c.CacheSize = 8 })
	var toks []string
	for i := range 50 {
		toks = append(toks, k1.Sign(claims(event, "u"+strconv.Itoa(i), time.Hour)))
	}
	for range 2 {
		for _, tok := range toks {
			if resp := f.do(http.MethodGet, "http://shop.example/", tok, ""); resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
}

// gatewayRelease is the gateway's release route: it records the tokens
// given back and answers status.
type gatewayRelease struct {
	*httptest.Server
	status atomic.Int32
	tokenLog
}

// tokenLog is the tokens a fake gateway route was sent, in order; safe for
// concurrent use.
type tokenLog struct {
	mu     sync.Mutex
	tokens []string
}

func (l *tokenLog) add(token string) {
	l.mu.Lock()
	l.tokens = append(l.tokens, token)
	l.mu.Unlock()
}

func (l *tokenLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.tokens...)
}

func newGatewayRelease(t *testing.T) *gatewayRelease {
	g := &gatewayRelease{}
	g.status.Store(http.StatusOK)
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/events/"+event+"/release" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "wrong route", http.StatusNotFound)
			return
		}
		var b struct{ Token string }
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		g.add(b.Token)
		w.WriteHeader(int(g.status.Load()))
		io.WriteString(w, `{"released":true}`)
	}))
	t.Cleanup(g.Close)
	return g
}

// TestGuardDonePath: a 2xx answer on the done path releases the slot with
// the token and clears the cookie; another answer, or another path, does
// neither; a failed release is logged, not shown.
func TestGuardDonePath(t *testing.T) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	gw := newGatewayRelease(t)
	var failures atomic.Int64
	f := newFixture(t, k1, func(c *entry.GuardConfig) {
		c.DonePath = "/order"
		c.Release = func(ctx context.Context, token string) error {
			_, err := entry.Release(ctx, gw.Client(), gw.URL, event, token)
			if err != nil {
				failures.Add(1)
			}
			return err
		}
	})
	tok := k1.Sign(claims(event, "alice", time.Hour))
	holdEnd := time.UnixMilli(claims(event, "alice", time.Hour).Expires)

	resp := f.do(http.MethodGet, "http://shop.example/product/1", tok, "")
	f.guard.Wait()
	checkCookies(t, resp, false, false, tok, holdEnd)
	f.status = http.StatusConflict
	resp = f.do(http.MethodPost, "http://shop.example/order", tok, "")
	f.guard.Wait()
	checkCookies(t, resp, false, false, tok, holdEnd)
	if got := gw.got(); len(got) != 0 {
		t.Fatalf("released without a 2xx on the done path: %d", len(got))
	}

	f.status = http.StatusOK
	resp = f.do(http.MethodPost, "http://shop.example/order", tok, "")
	f.guard.Wait()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	checkCookies(t, resp, false, true, tok, holdEnd)
	if got := gw.got(); len(got) != 1 || got[0] != tok {
		t.Fatalf("gateway got releases %q, want the token", got)
	}

	// The gateway fails: the visitor still sees the order placed.
	gw.status.Store(http.StatusServiceUnavailable)
	resp = f.do(http.MethodPost, "http://shop.example/order", tok, "")
	f.guard.Wait()
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(body) != "origin" || failures.Load() != 1 {
		t.Fatalf("status %d body %q, %d failed releases", resp.StatusCode, body, failures.Load())
	}
}

// TestGuardDonePathVariants: a path an origin may serve as the done path
// (letter case, ";" parameters, dot segments, repeated and trailing
// slashes, backslashes, a second decoding) ends the visit too; other paths
// do not.
func TestGuardDonePathVariants(t *testing.T) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	gw := newGatewayRelease(t)
	f := newFixture(t, k1, func(c *entry.GuardConfig) {
		c.DonePath = "/order"
		c.Release = func(ctx context.Context, token string) error {
			_, err := entry.Release(ctx, gw.Client(), gw.URL, event, token)
			return err
		}
	})
	tok := k1.Sign(claims(event, "alice", time.Hour))
	holdEnd := time.UnixMilli(claims(event, "alice", time.Hour).Expires)
	released := 0
	for _, p := range []string{"/order", "/ORDER", "/Order", "/order/", "//order", "/order;x=1", "/order;jsessionid=1/",
		"/cart/../order", "/./order", "/product/..;/order", "/order%5C", "/%256Frder", "/order.", "/ORDER/./"} {
		resp := f.do(http.MethodPost, "http://shop.example"+p, tok, "")
		f.guard.Wait()
		released++
		if got := gw.got(); resp.StatusCode != 200 || len(got) != released {
			t.Errorf("%s: %d, %d releases, want %d", p, resp.StatusCode, len(got), released)
			released = len(got)
			continue
		}
		checkCookies(t, resp, false, true, tok, holdEnd)
	}
	for _, p := range []string{"/orders", "/order/1", "/my/order", "/order-x", "/cart/order"} {
		f.do(http.MethodPost, "http://shop.example"+p, tok, "")
		f.guard.Wait()
		if got := gw.got(); len(got) != released {
			t.Errorf("%s released the slot", p)
			released = len(got)
		}
	}
}

func TestReleaseAnswers(t *testing.T) {
	gw := newGatewayRelease(t)
	ok, err := entry.Release(context.Background(), gw.Client(), gw.URL+"/", event, "e2.tok")
	if err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	gw.status.Store(http.StatusUnauthorized)
	if _, err := entry.Release(context.Background(), gw.Client(), gw.URL, event, "e2.tok"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a 401 from the gateway: %v", err)
	}
}

func TestNewGuardRefusesBadConfig(t *testing.T) {
	keys := entry.StaticKeys(entry.NewVerifier(nil))
	for name, c := range map[string]entry.GuardConfig{
		"no event":               {WaitingRoomURL: room, Keys: keys},
		"no waiting room":        {EventID: event, Keys: keys},
		"relative waiting room":  {EventID: event, WaitingRoomURL: "queue.example.com", Keys: keys},
		"no keys":                {EventID: event, WaitingRoomURL: room},
		"done path without hook": {EventID: event, WaitingRoomURL: room, Keys: keys, DonePath: "/order"},
		"bad cookie name":        {EventID: event, WaitingRoomURL: room, Keys: keys, CookieName: "a b"},
	} {
		if _, err := entry.NewGuard(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := entry.NewGuard(entry.GuardConfig{EventID: event, WaitingRoomURL: "/queue", Keys: keys}); err != nil {
		t.Errorf("a same-site path as waiting room: %v", err)
	}
}

func TestReasons(t *testing.T) {
	for err, want := range map[error]string{
		nil: "", entry.ErrMalformed: "malformed", entry.ErrUnknownKey: "unknown_key", entry.ErrSignature: "signature",
		entry.ErrExpired: "expired", entry.ErrOtherEvent: "other_event", entry.ErrKeysUnavailable: "keys_unavailable",
		errors.New("x"): "other",
	} {
		if got := entry.Reason(err); got != want {
			t.Errorf("Reason(%v) = %q, want %q", err, got, want)
		}
	}
}

// statusWriter is a ResponseWriter that keeps only the status.
type statusWriter struct {
	h      http.Header
	status int
}

func (w *statusWriter) Header() http.Header         { return w.h }
func (w *statusWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *statusWriter) WriteHeader(code int)        { w.status = code }

// BenchmarkGuard is the guard's cost per request once the cookie is set:
// an Ed25519 verification each time (no cache) against the cache of
// verified tokens, one goroutine and all of them.
func BenchmarkGuard(b *testing.B) {
	for _, format := range []string{"jwt", "e2"} {
		b.Run(format, func(b *testing.B) { benchmarkGuard(b, format) })
	}
}

// benchmarkGuard measures the guard with tokens of format: jwt, or e2, the
// format before, as the baseline.
func benchmarkGuard(b *testing.B, format string) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	claims := entry.Token{EventID: event, UserID: "user@example.com", Expires: time.Now().Add(time.Hour).UnixMilli()}
	tok := k1.Sign(claims)
	if format == "e2" {
		tok = entry.SignLegacy("k1", seed(1), claims)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	newHandler := func(b *testing.B, cache int) http.Handler {
		g, err := entry.NewGuard(entry.GuardConfig{EventID: event, WaitingRoomURL: room, Keys: entry.StaticKeys(k1.Verifier), CacheSize: cache})
		if err != nil {
			b.Fatal(err)
		}
		return g.Handler(next)
	}
	newRequest := func() *http.Request {
		req := httptest.NewRequest(http.MethodGet, "http://shop.example/product/7", nil)
		req.AddCookie(&http.Cookie{Name: "waitq_entry_" + event, Value: tok})
		return req
	}
	for _, bc := range []struct {
		name  string
		cache int
	}{{"verify-per-request", -1}, {"cached-cookie", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			h, req, w := newHandler(b, bc.cache), newRequest(), &statusWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
		b.Run(bc.name+"-parallel", func(b *testing.B) {
			h := newHandler(b, bc.cache)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req, w := newRequest(), &statusWriter{h: http.Header{}}
				n := 0
				for ; pb.Next(); n++ {
					h.ServeHTTP(w, req)
				}
				if n > 0 && w.status != http.StatusOK {
					b.Errorf("status %d", w.status)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// TestGuardArrivalStaysOnTheHost sends arrivals whose path a browser would
// read as another host's: the redirect that moves the token into the
// cookie must keep the browser on the shop's host, whatever the path.
func TestGuardArrivalStaysOnTheHost(t *testing.T) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	token := url.QueryEscape(k1.Sign(claims(event, "alice", 10*time.Minute)))
	for path, want := range map[string]string{
		"//evil.example/x":      "/evil.example/x?a=1",
		"///evil.example/x":     "/evil.example/x?a=1",
		"/\\evil.example/x":     "/%5Cevil.example/x?a=1",
		"/\\/evil.example/x":    "/%5C/evil.example/x?a=1",
		"/%2F%2Fevil.example/x": "/%2F%2Fevil.example/x?a=1",
		"/%5C%5Cevil.example/x": "/%5C%5Cevil.example/x?a=1",
		"/shop//evil.example/x": "/shop//evil.example/x?a=1",
		"/product/7":            "/product/7?a=1",
	} {
		t.Run(path, func(t *testing.T) {
			f := newFixture(t, k1, nil)
			resp := f.do(http.MethodGet, "http://shop.example"+path+"?a=1&waitq_token="+token, "", "")
			<-f.decisions
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusFound || loc != want {
				t.Fatalf("%d Location %q, want 302 %q", resp.StatusCode, loc, want)
			}
			// Browsers take a backslash for a slash in http(s) URLs.
			u, err := url.Parse("http://shop.example/here")
			if err == nil {
				u, err = u.Parse(strings.ReplaceAll(loc, "\\", "/"))
			}
			if err != nil || u.Host != "shop.example" {
				t.Errorf("Location %q leads to %v (%v), not the shop's host", loc, u, err)
			}
		})
	}
}

func TestCheckDecidesWithoutServing(t *testing.T) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	f := newFixture(t, k1, func(c *entry.GuardConfig) {
		c.DonePath, c.Release = "/order", func(context.Context, string) error { t.Error("Check released"); return nil }
	})
	valid := k1.Sign(claims(event, "alice", 10*time.Minute))
	for _, tc := range []struct {
		name, method, target, cookie string
		ok                           bool
		status                       int
		location                     string
	}{
		{"cookie", http.MethodGet, "http://shop.example/order?x=1", valid, true, 0, ""},
		{"arrival", http.MethodGet, "http://shop.example/p/7?waitq_token=" + valid + "&x=1", "", false, 302, "/p/7?x=1"},
		{"arrival elsewhere", http.MethodGet, "http://shop.example//evil.example/p?waitq_token=" + valid, "", false, 302, "/evil.example/p"},
		{"post arrival", http.MethodPost, "http://shop.example/cart?waitq_token=" + valid, "", true, 0, ""},
		{"no token", http.MethodGet, "http://shop.example/p/7", "", false, 302, roomFor("http://shop.example/p/7")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.target, nil)
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: "waitq_entry_" + event, Value: tc.cookie})
			}
			rec := httptest.NewRecorder()
			r, ok := f.guard.Check(rec, req)
			if ok != tc.ok || (!ok && (rec.Code != tc.status || rec.Header().Get("Location") != tc.location)) {
				t.Fatalf("ok %v, %d %q", ok, rec.Code, rec.Header().Get("Location"))
			}
			if ok {
				tok, _, has := entry.TokenFromContext(r.Context())
				if !has || tok.UserID != "alice" || strings.Contains(r.URL.RawQuery, entry.TokenParam) {
					t.Fatalf("passed request %s, token %+v", r.URL, tok)
				}
			}
			<-f.decisions
		})
	}
}

//go:build integration

package integration

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/stack/svcproc"
	"github.com/waitq/waitq/internal/testkit/chaos"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testproxy"
	"github.com/waitq/waitq/pkg/entry"
)

// The shop: waitq-guard (the program's own run, in the test process) in
// front of an origin of the test's own that writes every request it gets,
// with the identity the guard gave it, into the history. The guard reaches
// the gateways (their keys, the released list, the done path's releases)
// through a balancer of the test's that sends each request to a gateway
// that answers, as a load balancer in front of them would.

// releasedGrace: how long after a release was answered the guard may still
// pass its token: its poll of the released list (2 s, the default) twice,
// and the poll's own time.
const releasedGrace = 5 * time.Second

// shop is the guard and its origin, and the real proxies asking a second
// guard, in forward-auth mode, in front of the same origin.
type shop struct {
	event   string // the guard's event
	guard   string // http://host:port of waitq-guard
	fronts  []front
	cookie  string // the guard's cookie name
	client  *http.Client
	forged  string // a token of the main event signed by a key no gateway has
	stopped chan struct{}
}

// front is one way a visitor reaches the shop: waitq-guard's own proxy,
// or a real proxy (nginx, Caddy, with the configs shipped in deploy/)
// asking the forward-auth guard.
type front struct{ name, base string }

// startShop runs the origin, the balancer, waitq-guard, and the proxies
// with their forward-auth guard until the test ends.
func (c *campaign) startShop() *shop {
	t := c.t
	origin := c.origin(c.main)
	balancer := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "gateways" },
		Transport: gatewayBalancer{c},
	})
	t.Cleanup(balancer.Close)
	c.balancer = balancer.URL

	s := newShop(c.main)
	common := guardArgs(c.main, balancer.URL)
	s.guard = c.runGuard("waitq-guard", append([]string{"-origin-url", origin.URL}, common...)...)
	s.fronts = append(s.fronts, front{"guard", s.guard})
	// Forward authentication: the proxies ask a guard of its own, which
	// believes only their forwarded headers (loopback), and send what it
	// passes to the same origin.
	auth := c.runGuard("waitq-guard (forward auth)", append([]string{"-forward-auth", "-trusted-proxies", "127.0.0.1/32"}, common...)...)
	authAddr, originAddr := strings.TrimPrefix(auth, "http://"), strings.TrimPrefix(origin.URL, "http://")
	s.fronts = append(s.fronts,
		front{"nginx", "http://" + testproxy.Nginx(t, authAddr, originAddr)},
		front{"caddy", "http://" + testproxy.Caddy(t, authAddr, originAddr)})

	// A forger's token: right event, user and shape, wrong key.
	seed := make([]byte, ed25519.SeedSize)
	copy(seed, "the forger's own key, not waitq")
	kr, err := entry.NewKeyring("forged", seed, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.forged = kr.Sign(entry.Token{EventID: c.main, UserID: "forger", IssuedAt: now.UnixMilli(), Expires: now.Add(time.Hour).UnixMilli()})
	return s
}

// origin is a shop's origin behind the guard of event: every request it
// gets goes into the history with the identity the guard gave it.
func (c *campaign) origin(event string) *httptest.Server {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		exp, _ := strconv.ParseInt(r.Header.Get(guard.ExpiresHeader), 10, 64)
		c.h.AddOrigin(chaos.OriginRequest{Event: event, User: identityOf(r.Header), Expires: exp, Path: r.URL.EscapedPath(), At: time.Now()})
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "the shop")
	}))
	c.t.Cleanup(origin.Close)
	return origin
}

func newShop(event string) *shop {
	return &shop{
		event: event, cookie: "waitq_entry_" + event,
		client: &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
}

// guardArgs are the flags every guard of event takes, with the balancer in
// front of the gateways.
func guardArgs(event, balancer string) []string {
	return []string{
		"-event-id", event, "-gateway-url", balancer, "-waiting-room-url", "http://127.0.0.1:9/room",
		"-done-path", "/order", "-cookie-insecure", "-log-level", "warn",
	}
}

// runGuard runs waitq-guard (the program's own run, in the test process)
// with args on a free address until the test ends, returning its base URL.
func (c *campaign) runGuard(name string, args ...string) string {
	t := c.t
	addr := testenv.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	out, stopped := &testenv.Buffer{}, make(chan struct{})
	go func() {
		defer close(stopped)
		err := app.Run(ctx, &app.Guard{}, append([]string{"-http-addr", addr}, args...), func(string) string { return "" }, out)
		if err != nil {
			t.Errorf("%s stopped: %v", name, err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, tail(out.String(), 4000))
		}
	})
	if err := svcproc.WaitReady(ctx, "http://"+addr+guard.AdminPrefix+"readyz", stopped, 30*time.Second); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return "http://" + addr
}

// identityOf is the user the origin is told: every value of every header
// whose name folds to the guard's user header (case ignored, '_' read as
// '-'), as CGI, WSGI and PHP origins read them. A visitor's own among them
// names no admission, which the checker reports.
func identityOf(h http.Header) string {
	var vs []string
	for k, v := range h {
		if strings.EqualFold(strings.ReplaceAll(k, "_", "-"), guard.UserHeader) {
			vs = append(vs, v...)
		}
	}
	slices.Sort(vs)
	return strings.Join(vs, ",")
}

// gatewayBalancer sends each request to a gateway that answers, a random
// one first.
type gatewayBalancer struct{ c *campaign }

// RoundTrip sends r, and writes each arrival report into the history.
func (b gatewayBalancer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/arrivals") {
		return b.c.reportArrival(r, b.send)
	}
	return b.send(r)
}

func (b gatewayBalancer) send(r *http.Request) (*http.Response, error) {
	c := b.c
	first := c.rng.IntN(len(c.gateways))
	var errs []error
	for i := range c.gateways {
		a := c.addr(c.gateways[(first+i)%len(c.gateways)].alias)
		if a == "" {
			continue
		}
		if r.Body != nil && r.GetBody == nil && len(errs) > 0 {
			break // a body already sent cannot be sent again (one never sent, to a gateway with no address, can)
		}
		out := r.Clone(r.Context())
		out.URL.Host, out.Host = a, a
		if r.GetBody != nil {
			out.Body, _ = r.GetBody()
		}
		ctx, cancel := context.WithTimeout(r.Context(), 1500*time.Millisecond) // three within the guard's fetch timeout
		resp, err := balancerTransport.RoundTrip(out.WithContext(ctx))
		if err == nil {
			resp.Body = cancelOnClose{resp.Body, cancel}
			return resp, nil
		}
		cancel()
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, errors.New("no gateway is reachable now")
	}
	return nil, fmt.Errorf("no gateway answered: %w", errors.Join(errs...))
}

var balancerTransport = &http.Transport{DialContext: (&net.Dialer{Timeout: time.Second}).DialContext, MaxIdleConnsPerHost: 8}

type cancelOnClose struct {
	body   io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Read(p []byte) (int, error) { return b.body.Read(p) }
func (b cancelOnClose) Close() error               { defer b.cancel(); return b.body.Close() }

// guardRequest sends one request to the shop through front f: a token in
// the query or the cookie (none when empty), extra headers, and writes it
// to the history with the answer (its kind names the proxy, if any).
func (c *campaign) guardRequest(ctx context.Context, s *shop, f front, kind, user, method, path, token string, inQuery bool, header http.Header) chaos.Outcome {
	u := f.base + path
	if f.name != "guard" {
		kind += " via " + f.name
	}
	if token != "" && inQuery {
		u += "?" + entry.TokenParam + "=" + url.QueryEscape(token)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, u, nil)
	if err != nil {
		c.t.Errorf("guard request %s: %v", u, err)
		return chaos.NoAnswer
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" && !inQuery {
		req.AddCookie(&http.Cookie{Name: s.cookie, Value: token})
	}
	o := chaos.NoAnswer
	at := time.Now()
	if resp, err := s.client.Do(req); err == nil {
		resp.Body.Close()
		o = chaos.Outcome(strconv.Itoa(resp.StatusCode))
	}
	c.h.AddGuard(chaos.GuardRequest{Event: s.event, User: user, Kind: kind, At: at, Outcome: o})
	return o
}

// visitShop is an admitted visitor's visit: arrive with the token (the
// guard sets its cookie), look at a few pages (one with a Connection
// header naming the guard's identity header, which must not make it
// vanish), and half the time order on the done path, which ends the visit
// and releases the slot (reported: true).
func (u *user) visitShop(ctx context.Context, a gateway.AdmittedFrame) (released bool) {
	c := u.c
	f := c.shop.fronts[c.rng.IntN(len(c.shop.fronts))]
	c.guardRequest(ctx, c.shop, f, "enter", u.id, http.MethodGet, "/shop/item/1", a.EntryToken, true, nil)
	for i := range 1 + c.rng.IntN(3) {
		var h http.Header
		switch p := c.rng.Float64(); {
		case i == 0 && p < 0.3:
			h = http.Header{"Connection": {guard.UserHeader + ", " + guard.ExpiresHeader}}
		case p < 0.5:
			// Another user's name under a spelling CGI origins fold
			// into the guard's header.
			h = http.Header{"X_waitq_user_id": {"mallory"}, "X-Original-URI": {"/static/x.css"}}
		}
		c.guardRequest(ctx, c.shop, f, "visit", u.id, http.MethodGet, fmt.Sprintf("/shop/item/%d", i+2), a.EntryToken, false, h)
		clock.Sleep(ctx, c.rng.Between(0, 700*time.Millisecond))
	}
	if c.rng.Float64() >= 0.5 {
		return false
	}
	at := time.Now()
	var h http.Header
	if f.name != "guard" && c.rng.Float64() < 0.5 {
		// The order judged as a bypassed GET would release nothing.
		h = http.Header{"X-Original-URI": {"/static/x.css"}, "X-Forwarded-Method": {"GET"}}
	}
	o := c.guardRequest(ctx, c.shop, f, "done", u.id, http.MethodPost, "/order", a.EntryToken, false, h)
	c.h.AddRelease(chaos.Release{Event: u.event, User: u.id, At: at, Via: "guard", Outcome: o, ExpiresAt: a.ExpiresAt})
	return true
}

// probeExpired comes back with the token after its stay ended (and the
// guard's skew): the guard must send it to the line.
func (u *user) probeExpired(ctx context.Context, a gateway.AdmittedFrame) {
	clock.Sleep(ctx, time.Until(time.UnixMilli(a.ExpiresAt).Add(3*time.Second)))
	if ctx.Err() == nil {
		u.c.guardRequest(ctx, u.c.shop, u.c.shop.fronts[0], "expired", u.id, http.MethodGet, "/shop/item/9", a.EntryToken, false, nil)
	}
}

// probeReleased comes back with the token after its release was answered
// (a shared link, the Back button), within the hold: the guard must refuse
// it once its released list has it.
func (u *user) probeReleased(ctx context.Context, a gateway.AdmittedFrame) {
	clock.Sleep(ctx, releasedGrace+500*time.Millisecond)
	if ctx.Err() == nil {
		u.c.guardRequest(ctx, u.c.shop, u.c.shop.fronts[0], "released", u.id, http.MethodGet, "/shop/item/9", a.EntryToken, false, nil)
	}
}

// probes sends, every 500 ms until ctx ends, through each front in turn, a
// request that must not reach the origin: no token, a forged one, another
// event's, a path that a servlet container would read as another (a bypass
// prefix with "..;"), or forwarded headers naming a bypassed path or
// another method (which the proxies must overwrite or drop).
func (c *campaign) probes(ctx context.Context) {
	forgedForward := http.Header{
		"X-Original-URI": {"/static/shop.css"}, "X-Forwarded-Uri": {"/static/shop.css"},
		"X-Forwarded-Method": {"OPTIONS"}, "X_waitq_user_id": {"mallory"},
	}
	for i := 0; ctx.Err() == nil; i++ {
		f := c.shop.fronts[(i/6)%len(c.shop.fronts)]
		switch i % 6 {
		case 0:
			c.guardRequest(ctx, c.shop, f, "none", "", http.MethodGet, "/shop/item/1", "", false, nil)
		case 1:
			c.guardRequest(ctx, c.shop, f, "forged", "forger", http.MethodGet, "/shop/item/1", c.shop.forged, i%2 == 0, nil)
		case 2:
			if tok, _ := c.dropToken.Load().(string); tok != "" {
				c.guardRequest(ctx, c.shop, f, "other-event", "", http.MethodGet, "/shop/item/1", tok, false, nil)
			}
		case 3:
			c.guardRequest(ctx, c.shop, f, "trick", "", http.MethodGet, "/static/..;/orders", "", false, nil)
		case 4:
			c.guardRequest(ctx, c.shop, f, "trick", "", http.MethodGet, "/static/%2e%2e;/orders", "", false, nil)
		case 5:
			c.guardRequest(ctx, c.shop, f, "forwarded", "", http.MethodPost, "/order", "", false, forgedForward)
		}
		clock.Sleep(ctx, 500*time.Millisecond)
	}
}

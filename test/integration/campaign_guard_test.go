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
	"strconv"
	"time"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/stack/svcproc"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/tools/chaos"
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

// shop is the guard and its origin.
type shop struct {
	guard   string // http://host:port of waitq-guard
	cookie  string // the guard's cookie name
	client  *http.Client
	forged  string // a token of the main event signed by a key no gateway has
	stopped chan struct{}
}

// startShop runs the origin, the balancer and waitq-guard until the test
// ends.
func (c *campaign) startShop() *shop {
	t := c.t
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		exp, _ := strconv.ParseInt(r.Header.Get(guard.ExpiresHeader), 10, 64)
		c.h.AddOrigin(chaos.OriginRequest{Event: c.main, User: r.Header.Get(guard.UserHeader), Expires: exp, Path: r.URL.EscapedPath(), At: time.Now()})
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "the shop")
	}))
	t.Cleanup(origin.Close)

	balancer := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "gateways" },
		Transport: gatewayBalancer{c},
	})
	t.Cleanup(balancer.Close)

	addr := testenv.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := &testenv.Buffer{}
	s := &shop{
		guard: "http://" + addr, cookie: "waitq_entry_" + c.main, stopped: make(chan struct{}),
		client: &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
	go func() {
		defer close(s.stopped)
		err := app.Run(ctx, &app.Guard{}, []string{
			"-http-addr", addr, "-origin-url", origin.URL, "-event-id", c.main,
			"-gateway-url", balancer.URL, "-waiting-room-url", "http://127.0.0.1:9/room",
			"-done-path", "/order", "-cookie-insecure", "-log-level", "warn",
		}, func(string) string { return "" }, out)
		if err != nil {
			t.Errorf("waitq-guard stopped: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-s.stopped
		if t.Failed() {
			t.Logf("waitq-guard's log:\n%s", tail(out.String(), 4000))
		}
	})
	if err := svcproc.WaitReady(ctx, s.guard+guard.AdminPrefix+"readyz", s.stopped, 30*time.Second); err != nil {
		t.Fatalf("waitq-guard: %v", err)
	}

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

// gatewayBalancer sends each request to a gateway that answers, a random
// one first.
type gatewayBalancer struct{ c *campaign }

func (b gatewayBalancer) RoundTrip(r *http.Request) (*http.Response, error) {
	c := b.c
	first := c.rng.IntN(len(c.gateways))
	var errs []error
	for i := range c.gateways {
		a := c.addr(c.gateways[(first+i)%len(c.gateways)].alias)
		if a == "" {
			continue
		}
		if r.Body != nil && r.GetBody == nil && i > 0 {
			break // a body already sent cannot be sent again
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

// guardRequest sends one request to the guard: a token in the query or
// the cookie (none when empty), extra headers, and writes it to the
// history with the guard's answer.
func (c *campaign) guardRequest(ctx context.Context, kind, user, method, path, token string, inQuery bool, header http.Header) chaos.Outcome {
	s := c.shop
	u := s.guard + path
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
	c.h.AddGuard(chaos.GuardRequest{Event: c.main, User: user, Kind: kind, At: at, Outcome: o})
	return o
}

// visitShop is an admitted visitor's visit: arrive with the token (the
// guard sets its cookie), look at a few pages (one with a Connection
// header naming the guard's identity header, which must not make it
// vanish), and half the time order on the done path, which ends the visit
// and releases the slot (reported: true).
func (u *user) visitShop(ctx context.Context, a gateway.AdmittedFrame) (released bool) {
	c := u.c
	c.guardRequest(ctx, "enter", u.id, http.MethodGet, "/shop/item/1", a.EntryToken, true, nil)
	for i := range 1 + c.rng.IntN(3) {
		var h http.Header
		if i == 0 && c.rng.Float64() < 0.3 {
			h = http.Header{"Connection": {guard.UserHeader + ", " + guard.ExpiresHeader}}
		}
		c.guardRequest(ctx, "visit", u.id, http.MethodGet, fmt.Sprintf("/shop/item/%d", i+2), a.EntryToken, false, h)
		clock.Sleep(ctx, c.rng.Between(0, 700*time.Millisecond))
	}
	if c.rng.Float64() >= 0.5 {
		return false
	}
	at := time.Now()
	o := c.guardRequest(ctx, "done", u.id, http.MethodPost, "/order", a.EntryToken, false, nil)
	c.h.AddRelease(chaos.Release{Event: u.event, User: u.id, At: at, Via: "guard", Outcome: o, ExpiresAt: a.ExpiresAt})
	return true
}

// probeExpired comes back with the token after its hold ended (and the
// guard's skew): the guard must send it to the line.
func (u *user) probeExpired(ctx context.Context, a gateway.AdmittedFrame) {
	clock.Sleep(ctx, time.Until(time.UnixMilli(a.ExpiresAt).Add(3*time.Second)))
	if ctx.Err() == nil {
		u.c.guardRequest(ctx, "expired", u.id, http.MethodGet, "/shop/item/9", a.EntryToken, false, nil)
	}
}

// probeReleased comes back with the token after its release was answered
// (a shared link, the Back button), within the hold: the guard must refuse
// it once its released list has it.
func (u *user) probeReleased(ctx context.Context, a gateway.AdmittedFrame) {
	clock.Sleep(ctx, releasedGrace+500*time.Millisecond)
	if ctx.Err() == nil {
		u.c.guardRequest(ctx, "released", u.id, http.MethodGet, "/shop/item/9", a.EntryToken, false, nil)
	}
}

// probes sends, every 500 ms until ctx ends, a request that must not reach
// the origin: no token, a forged one, another event's, or a path that a
// servlet container would read as another (a bypass prefix with "..;").
func (c *campaign) probes(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		switch i % 5 {
		case 0:
			c.guardRequest(ctx, "none", "", http.MethodGet, "/shop/item/1", "", false, nil)
		case 1:
			c.guardRequest(ctx, "forged", "forger", http.MethodGet, "/shop/item/1", c.shop.forged, i%2 == 0, nil)
		case 2:
			if tok, _ := c.dropToken.Load().(string); tok != "" {
				c.guardRequest(ctx, "other-event", "", http.MethodGet, "/shop/item/1", tok, false, nil)
			}
		case 3:
			c.guardRequest(ctx, "trick", "", http.MethodGet, "/static/..;/orders", "", false, nil)
		case 4:
			c.guardRequest(ctx, "trick", "", http.MethodGet, "/static/%2e%2e;/orders", "", false, nil)
		}
		clock.Sleep(ctx, 500*time.Millisecond)
	}
}

package guard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/contract"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/entry"
)

// releasedEvery is the guards' poll of the released admissions in
// TestReleasedTokenRefusedByEveryGuard.
const releasedEvery = 200 * time.Millisecond

// TestReleasedTokenRefusedByEveryGuard: a visitor's slot released on one
// guard's done path (Redis and a gateway for real) makes both guards,
// sharing nothing but the gateway, refuse the token within a poll
// interval, though it verifies offline until its exp and both had cached
// it as valid; another visitor's token still passes. With the gateway
// gone, the polls fail, are counted, and the last list stays in force.
func TestReleasedTokenRefusedByEveryGuard(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 1)
	tickets, err := queue.NewTicketSigner("guard-test-secret")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := entry.DerivedKeyring("guard-test-secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{}, gateway.Deps{Store: sys.Store, Publisher: sys.Pub, Tickets: tickets, Entry: keys, Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = gw.Run(ctx) }()
	<-gw.Started()
	gwSrv := httptest.NewServer(contract.Gateway(t).Handler(t, gw))
	t.Cleanup(gwSrv.Close)

	// alice and bob hold a slot for a minute; the gateway signed their tokens.
	admit := func(user string) string {
		until := time.Now().Add(time.Minute).UnixMilli()
		if err := sys.Store.Client().ZAdd(ctx, redisstore.HoldersKey(ev), redis.Z{Score: float64(until), Member: user}).Err(); err != nil {
			t.Fatal(err)
		}
		return keys.Sign(entry.Token{EventID: ev, UserID: user, Expires: until, IssuedAt: time.Now().UnixMilli()})
	}
	alice, bob := admit("alice"), admit("bob")

	o := newOrigin(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	type replica struct {
		p   *guard.Proxy
		srv *httptest.Server
	}
	var guards [2]replica
	for i := range guards {
		p, err := guard.New(guard.Config{
			OriginURL: o.URL, EventID: ev, WaitingRoomURL: room, GatewayURL: gwSrv.URL, DonePath: "/order",
			ReleasedInterval: releasedEvery,
		}, guard.Deps{Keys: entry.NewKeySource(entry.KeySourceConfig{URL: gwSrv.URL + "/.well-known/jwks.json"}), Logger: testenv.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		go p.RunReleased(ctx)
		guards[i] = replica{p, httptest.NewServer(contract.Guard(t).Handler(t, p))}
		t.Cleanup(guards[i].srv.Close)
	}
	do := func(g replica, method, path, token string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, g.srv.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: "waitq_entry_" + ev, Value: token})
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for i, g := range guards {
		for _, tok := range []string{alice, bob} {
			if r := do(g, "GET", "/product", tok); r.StatusCode != http.StatusOK {
				t.Fatalf("guard %d before the release: %d", i, r.StatusCode)
			}
		}
	}

	// alice orders on guard 0: the done path releases her slot.
	if r := do(guards[0], "POST", "/order", alice); r.StatusCode != http.StatusOK {
		t.Fatalf("order: %d", r.StatusCode)
	}
	guards[0].p.Wait()
	released := time.Now()
	for i, g := range guards {
		for {
			r := do(g, "GET", "/product", alice)
			if r.StatusCode == http.StatusFound && strings.HasPrefix(r.Header.Get("Location"), room) {
				if !strings.Contains(r.Header.Get("Set-Cookie"), "Max-Age=0") {
					t.Errorf("guard %d refused without clearing the cookie: %q", i, r.Header.Get("Set-Cookie"))
				}
				break
			}
			// One interval, and as much again for a slow machine.
			if time.Since(released) > 2*releasedEvery+time.Second {
				t.Fatalf("guard %d still answers %d to the released token %v after the release", i, r.StatusCode, time.Since(released))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if r := do(g, "GET", "/product", bob); r.StatusCode != http.StatusOK {
			t.Fatalf("guard %d refused bob, not released: %d", i, r.StatusCode)
		}
	}
	t.Logf("both guards refused the released token %v after the release", time.Since(released))
	m := scrape(t, guards[1].srv.URL)
	wantMetric(t, m, `waitq_guard_refused_tokens_total{event="`+ev+`",reason="released"} 1`)

	// The gateway goes: the polls fail, are counted, and the list stays.
	gwSrv.CloseClientConnections()
	gwSrv.Close()
	time.Sleep(3 * releasedEvery)
	m = scrape(t, guards[1].srv.URL)
	if strings.Contains(m, `waitq_guard_released_refresh_errors_total{event="`+ev+`"} 0`) ||
		!strings.Contains(m, `waitq_guard_released_refresh_errors_total{event="`+ev+`"}`) {
		t.Errorf("no failed poll counted")
	}
	if r := do(guards[1], "GET", "/product", alice); r.StatusCode != http.StatusFound {
		t.Fatalf("with the gateway gone, the released token got %d", r.StatusCode)
	}
	if r := do(guards[1], "GET", "/product", bob); r.StatusCode != http.StatusOK {
		t.Fatalf("with the gateway gone, bob got %d", r.StatusCode)
	}
}

// scrape returns the /metrics text of the guard at base.
func scrape(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + guard.AdminPrefix + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

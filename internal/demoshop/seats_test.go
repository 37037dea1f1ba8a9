package demoshop_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/entry"
)

// TestSeatMap: the seated ticket's page over a real gateway and Redis, as
// the guard forwards it (the entry token in TokenHeader): a buyer holds a
// seat, which the other buyer sees greyed and cannot take, places the
// order (the seat sold); the other holds a seat and cancels it.
func TestSeatMap(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	e := sys.CreateEvent(ev, 10, 1)
	e.ShopToken = "demo-shop-sale-token-0123456789"
	if _, err := sys.Store.PutEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	keys, err := entry.DerivedKeyring("shop-secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{}, gateway.Deps{Store: sys.Store, Publisher: sys.Pub, Entry: keys, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gws := httptest.NewServer(gw)
	t.Cleanup(gws.Close)
	until := time.Now().Add(time.Minute).UnixMilli()
	token := map[string]string{}
	for _, u := range []string{"alice", "bob"} {
		if err := sys.Store.Client().ZAdd(context.Background(), redisstore.HoldersKey(ev), redis.Z{Score: float64(until), Member: u}).Err(); err != nil {
			t.Fatal(err)
		}
		token[u] = keys.Sign(entry.Token{EventID: ev, UserID: u, Expires: until, IssuedAt: time.Now().UnixMilli()})
	}
	shop := httptest.NewServer(newShop(t, demoshop.Config{GatewayURL: gws.URL, EventID: ev, ShopToken: e.ShopToken}))
	t.Cleanup(shop.Close)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(user, method, path string, form url.Values) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(method, shop.URL+path, strings.NewReader(form.Encode()))
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.Header.Set(demoshop.UserHeader, user)
		req.Header.Set(demoshop.TokenHeader, token[user])
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(b)
	}
	page := func(user, path string, want ...string) string {
		t.Helper()
		code, _, body := do(user, "GET", path, nil)
		for _, w := range want {
			if code != 200 || !strings.Contains(body, w) {
				t.Fatalf("%s GET %s: %d, lacks %q:\n%s", user, path, code, w, body)
			}
		}
		return body
	}
	page("bob", "/product/2", `value="A1" class="seat">`, `value="B6" class="seat">`)
	if strings.Contains(page("bob", "/product/1"), "seatmap") {
		t.Fatal("the standing ticket shows a seat map")
	}

	code, loc, _ := do("alice", "POST", "/seats/hold", url.Values{"seat": {"A1"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/product/2?held=A1") {
		t.Fatalf("alice holds A1: %d %s", code, loc)
	}
	page("alice", loc, "Seat A1 is held for you until", `value="A1" class="seat mine" disabled`, `id="place"`, `id="cancel"`)
	page("bob", "/product/2", `value="A1" class="seat taken" disabled`, `value="A2" class="seat">`)
	if code, loc, _ := do("bob", "POST", "/seats/hold", url.Values{"seat": {"A1"}}); code != http.StatusSeeOther || loc != "/product/2?msg=taken" {
		t.Fatalf("bob holds alice's A1: %d %s", code, loc)
	}
	page("bob", "/product/2?msg=taken", "That seat was just taken")
	// An address naming alice's seat as bob's changes nothing: ordering it
	// is refused by the gateway.
	if code, loc, _ := do("bob", "POST", "/order", url.Values{"product": {"2"}, "seat": {"A1"}}); code != http.StatusSeeOther || loc != "/product/2?msg=notheld" {
		t.Fatalf("bob orders alice's A1: %d %s", code, loc)
	}

	page("alice", "/product/2") // seat A1 stays taken for her too, as held
	if code, _, body := do("alice", "POST", "/order", url.Values{"product": {"2"}, "seat": {"A1"}}); code != 200 || !strings.Contains(body, "Seat A1 is yours") {
		t.Fatalf("alice orders A1: %d %s", code, body)
	}
	items, err := sys.Store.Items(context.Background(), ev, time.Now().UnixMilli())
	if err != nil || items["A1"] != "sold" {
		t.Fatalf("A1 after the order: %v %v", items, err)
	}

	if code, loc, _ := do("bob", "POST", "/seats/hold", url.Values{"seat": {"A2"}}); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/product/2?held=A2") {
		t.Fatalf("bob holds A2: %d %s", code, loc)
	}
	if code, loc, _ := do("bob", "POST", "/seats/release", url.Values{"seat": {"A2"}}); code != http.StatusSeeOther || loc != "/product/2?msg=released" {
		t.Fatalf("bob cancels A2: %d %s", code, loc)
	}
	page("bob", "/product/2?msg=released", "Your seat is free again", `value="A2" class="seat">`, `value="A1" class="seat taken" disabled`)
	// An order of a seat not held is refused, and the slot is not ended by it.
	if code, loc, _ := do("bob", "POST", "/order", url.Values{"product": {"2"}, "seat": {"A3"}}); code != http.StatusSeeOther || loc != "/product/2?msg=notheld" {
		t.Fatalf("bob orders A3 he does not hold: %d %s", code, loc)
	}
}

package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/entry"
)

// holdEnv is a gateway over a System with an event whose buyers are
// admitted by the test.
type holdEnv struct {
	*gwEnv
	ev string
}

// admit gives user a slot of the event until the clock's now + d and
// returns their entry token.
func (h holdEnv) admit(t *testing.T, user string, d time.Duration) string {
	t.Helper()
	until := h.clock.Now().Add(d).UnixMilli()
	if err := h.sys.Store.Client().ZAdd(context.Background(), redisstore.HoldersKey(h.ev), redis.Z{Score: float64(until), Member: user}).Err(); err != nil {
		t.Fatal(err)
	}
	return h.entry.Sign(entry.Token{EventID: h.ev, UserID: user, Expires: until, IssuedAt: h.clock.Now().UnixMilli()})
}

// call sends method path with body (JSON, "" for none) and the token as a
// bearer ("" for none), and returns the status and the body.
func (h holdEnv) call(t *testing.T, method, path, body, bearer string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (h holdEnv) hold(t *testing.T, token, item string) (int, []byte) {
	t.Helper()
	return h.call(t, "POST", "/v1/events/"+h.ev+"/holds", fmt.Sprintf(`{"token":%q,"item":%q}`, token, item), "")
}

func startHolds(t *testing.T, maxItems int) holdEnv {
	t.Helper()
	return startHoldsWith(t, maxItems, gateway.Config{})
}

// startHoldsWith is startHolds with the gateway's cfg.
func startHoldsWith(t *testing.T, maxItems int, cfg gateway.Config) holdEnv {
	t.Helper()
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	e := sys.CreateEvent(ev, 100, 1)
	e.MaxItemsPerUser, e.ShopToken = maxItems, testShopToken
	if _, err := sys.Store.PutEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return holdEnv{startGateway(t, sys, cfg, nil), ev}
}

// testShopToken is the shop token of startHolds' events: the credential
// of the sales.
const testShopToken = "test-shop-token-0123456789abcdef"

func errCode(b []byte) queue.Code {
	var eb httpkit.ErrorBody
	_ = json.Unmarshal(b, &eb)
	return queue.Code(eb.Error.Code)
}

func TestHoldRoutes(t *testing.T) {
	t.Parallel()
	h := startHolds(t, 1)
	alice, bob := h.admit(t, "alice", time.Minute), h.admit(t, "bob", time.Minute)

	code, body := h.hold(t, alice, "A-1")
	var got queue.Hold
	if err := json.Unmarshal(body, &got); code != 201 || err != nil || got.UserID != "alice" || got.Item != "A-1" || got.EventID != h.ev || got.ExpiresAt <= h.clock.Now().UnixMilli() {
		t.Fatalf("hold: %d %s", code, body)
	}
	if code, again := h.hold(t, alice, "A-1"); code != 200 || string(again) != string(body) {
		t.Fatalf("hold again: %d %s, want 200 %s", code, again, body)
	}

	released := h.admit(t, "carol", time.Minute)
	if code, _ := h.call(t, "POST", "/v1/events/"+h.ev+"/release", `{"token":"`+released+`"}`, ""); code != 200 {
		t.Fatalf("release carol: %d", code)
	}
	expired := h.entry.Sign(entry.Token{EventID: h.ev, UserID: "alice", Expires: h.clock.Now().Add(-time.Minute).UnixMilli()})
	otherEvent := h.entry.Sign(entry.Token{EventID: h.ev + "-x", UserID: "alice", Expires: h.clock.Now().Add(time.Minute).UnixMilli()})
	holds := "/v1/events/" + h.ev + "/holds"
	for _, tc := range []struct {
		name         string
		method, path string
		body, bearer string
		status       int
		code         queue.Code
	}{
		{"held by another", "POST", holds, `{"token":"` + bob + `","item":"A-1"}`, "", 409, queue.CodeItemHeld},
		{"over the limit", "POST", holds, `{"token":"` + alice + `","item":"A-2"}`, "", 409, queue.CodeHoldLimit},
		{"bad token", "POST", holds, `{"token":"e2.forged.x.y","item":"A-2"}`, "", 401, queue.CodeInvalidTicket},
		{"expired token", "POST", holds, `{"token":"` + expired + `","item":"A-2"}`, "", 401, queue.CodeInvalidTicket},
		{"released token", "POST", holds, `{"token":"` + released + `","item":"A-2"}`, "", 401, queue.CodeInvalidTicket},
		{"other event's token", "POST", holds, `{"token":"` + otherEvent + `","item":"A-2"}`, "", 401, queue.CodeInvalidTicket},
		{"bad item", "POST", holds, `{"token":"` + bob + `","item":"A 2"}`, "", 400, queue.CodeInvalidItem},
		{"empty item", "POST", holds, `{"token":"` + bob + `","item":""}`, "", 400, queue.CodeInvalidItem},
		{"long item", "POST", holds, `{"token":"` + bob + `","item":"` + strings.Repeat("a", 129) + `"}`, "", 400, queue.CodeInvalidItem},
		{"bad body", "POST", holds, `{"tok":"x"}`, "", 400, queue.CodeInvalidBody},
		{"bad event", "POST", "/v1/events/bad!/holds", `{"token":"` + bob + `","item":"A-2"}`, "", 400, queue.CodeInvalidEventID},
		{"delete by another", "DELETE", holds + "/A-1", "", bob, 403, queue.CodeNotHolder},
		{"delete without token", "DELETE", holds + "/A-1", "", "", 401, queue.CodeInvalidTicket},
		{"delete bad item", "DELETE", holds + "/A%202", "", alice, 400, queue.CodeInvalidItem},
		{"confirm by another", "POST", holds + "/A-1/confirm", `{"token":"` + bob + `"}`, testShopToken, 403, queue.CodeNotHolder},
		{"confirm released token", "POST", holds + "/A-1/confirm", `{"token":"` + released + `"}`, testShopToken, 401, queue.CodeInvalidTicket},
		{"confirm bad token", "POST", holds + "/A-1/confirm", `{"token":"x"}`, testShopToken, 401, queue.CodeInvalidTicket},
		{"confirm without the shop token", "POST", holds + "/A-1/confirm", `{"token":"` + alice + `"}`, "", 401, queue.CodeUnauthorized},
		{"confirm with the entry token as the shop's", "POST", holds + "/A-1/confirm", `{"token":"` + alice + `"}`, alice, 401, queue.CodeUnauthorized},
		{"confirm with a wrong shop token", "POST", holds + "/A-1/confirm", `{"token":"` + alice + `"}`, testShopToken + "x", 401, queue.CodeUnauthorized},
		{"unsell without the shop token", "DELETE", holds + "/A-1/sale", "", alice, 401, queue.CodeUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := h.call(t, tc.method, tc.path, tc.body, tc.bearer)
			if code != tc.status || errCode(body) != tc.code {
				t.Fatalf("%s %s: %d %s, want %d %s", tc.method, tc.path, code, body, tc.status, tc.code)
			}
		})
	}
	// The refused DELETE left alice holding.
	code, body = h.call(t, "GET", holds, "", "")
	var items gateway.ItemsResponse
	if err := json.Unmarshal(body, &items); code != 200 || err != nil || items.Items["A-1"] != queue.ItemHeld {
		t.Fatalf("seat map after a refused delete: %d %s", code, body)
	}
	// Alice buys A-1; bob cannot hold it; confirming again is the same sale.
	for range 2 {
		code, body := h.call(t, "POST", holds+"/A-1/confirm", `{"token":"`+alice+`"}`, testShopToken)
		var sale queue.Sale
		if err := json.Unmarshal(body, &sale); code != 200 || err != nil || sale.UserID != "alice" {
			t.Fatalf("confirm: %d %s", code, body)
		}
	}
	if code, body := h.hold(t, bob, "A-1"); code != 409 || errCode(body) != queue.CodeItemSold {
		t.Fatalf("hold a sold item: %d %s", code, body)
	}
	if code, body := h.call(t, "DELETE", holds+"/A-1", "", alice); code != 403 || errCode(body) != queue.CodeNotHolder {
		t.Fatalf("delete a sold item: %d %s", code, body)
	}
	// Bob holds and gives back B-1; giving it back again is no error.
	if code, body := h.hold(t, bob, "B-1"); code != 201 {
		t.Fatalf("bob holds B-1: %d %s", code, body)
	}
	for range 2 {
		if code, body := h.call(t, "DELETE", holds+"/B-1", "", bob); code != 204 {
			t.Fatalf("delete by the holder: %d %s", code, body)
		}
	}
	// Bob's slot ends: a hold he takes now ends with it.
	if code, body := h.hold(t, bob, "B-2"); code != 201 {
		t.Fatalf("bob holds B-2: %d %s", code, body)
	}
	if code, _ := h.call(t, "POST", "/v1/events/"+h.ev+"/release", `{"token":"`+bob+`"}`, ""); code != 200 {
		t.Fatal("release bob")
	}
	dave := h.admit(t, "dave", time.Minute)
	if code, body := h.hold(t, dave, "B-2"); code != 201 {
		t.Fatalf("dave holds B-2 freed by bob's release: %d %s", code, body)
	}
	code, body = h.call(t, "GET", holds, "", "")
	if err := json.Unmarshal(body, &items); code != 200 || err != nil || len(items.Items) != 2 || items.Items["A-1"] != queue.ItemSold || items.Items["B-2"] != queue.ItemHeld {
		t.Fatalf("seat map: %d %s", code, body)
	}
	if code, body := h.call(t, "GET", "/v1/events/nosuch-"+h.ev+"/holds", "", ""); code != 404 || errCode(body) != queue.CodeEventNotFound {
		t.Fatalf("seat map of an unknown event: %d %s", code, body)
	}

	_, metrics := h.call(t, "GET", "/metrics", "", "")
	for _, want := range []string{
		`waitq_holds_taken_total{event="` + h.ev + `"} 4`,
		`waitq_holds_refused_total{event="` + h.ev + `",reason="item_held"} 1`,
		`waitq_holds_refused_total{event="` + h.ev + `",reason="hold_limit"} 1`,
		`waitq_holds_refused_total{event="` + h.ev + `",reason="item_sold"} 1`,
		`waitq_holds_refused_total{event="` + h.ev + `",reason="invalid_ticket"} 4`,
		`waitq_holds_released_total{event="` + h.ev + `"} 1`,
		`waitq_items_sold_total{event="` + h.ev + `"} 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/entry"
)

// TestHoldItemRoute: GET of one item: held (until when), free or sold; the
// user id only to the holder's or buyer's own entry token; every bad input.
func TestHoldItemRoute(t *testing.T) {
	t.Parallel()
	h := startHolds(t, 2)
	alice, bob := h.admit(t, "alice", time.Minute), h.admit(t, "bob", time.Minute)
	carol := h.admit(t, "carol", 10*time.Second)
	for _, hold := range []struct{ token, item string }{{alice, "A-1"}, {alice, "S-1"}, {carol, "C-1"}} {
		if code, body := h.hold(t, hold.token, hold.item); code != 201 {
			t.Fatalf("hold %s: %d %s", hold.item, code, body)
		}
	}
	if code, body := h.call(t, "POST", "/v1/events/"+h.ev+"/holds/S-1/confirm", `{"token":"`+alice+`"}`, testShopToken); code != 200 {
		t.Fatalf("confirm S-1: %d %s", code, body)
	}
	var held queue.Hold
	if code, body := h.hold(t, alice, "A-1"); code != 200 || json.Unmarshal(body, &held) != nil {
		t.Fatalf("hold A-1 again: %d %s", code, body)
	}
	aliceEnd := held.ExpiresAt
	forged := h.entry.Sign(entry.Token{EventID: h.ev + "-x", UserID: "alice", Expires: h.clock.Now().Add(time.Minute).UnixMilli()})
	item := "/v1/events/" + h.ev + "/holds/"
	for _, tc := range []struct {
		name, item, bearer string
		want               queue.ItemHold
	}{
		{"held, no token", "A-1", "", queue.ItemHold{State: queue.ItemHeld, ExpiresAt: aliceEnd}},
		{"held, another's token", "A-1", bob, queue.ItemHold{State: queue.ItemHeld, ExpiresAt: aliceEnd}},
		{"held, another event's token of the holder", "A-1", forged, queue.ItemHold{State: queue.ItemHeld, ExpiresAt: aliceEnd}},
		{"held, a bad token", "A-1", "e2.nope", queue.ItemHold{State: queue.ItemHeld, ExpiresAt: aliceEnd}},
		{"held, the holder's token", "A-1", alice, queue.ItemHold{State: queue.ItemHeld, ExpiresAt: aliceEnd, UserID: "alice"}},
		{"sold, no token", "S-1", "", queue.ItemHold{State: queue.ItemSold}},
		{"sold, the buyer's token", "S-1", alice, queue.ItemHold{State: queue.ItemSold, UserID: "alice"}},
		{"free", "F-1", alice, queue.ItemHold{State: queue.ItemFree}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := h.call(t, "GET", item+tc.item, "", tc.bearer)
			var got queue.ItemHold
			tc.want.EventID, tc.want.Item = h.ev, tc.item
			if err := json.Unmarshal(body, &got); code != 200 || err != nil || got != tc.want {
				t.Fatalf("GET %s: %d %s, want %+v", tc.item, code, body, tc.want)
			}
			if tc.want.UserID == "" && strings.Contains(string(body), "userId") {
				t.Fatalf("GET %s shows a user id: %s", tc.item, body)
			}
		})
	}
	for _, tc := range []struct {
		name, path string
		status     int
		code       queue.Code
	}{
		{"bad item", item + "A%202", 400, queue.CodeInvalidItem},
		{"long item", item + strings.Repeat("a", 129), 400, queue.CodeInvalidItem},
		{"bad event", "/v1/events/bad!/holds/A-1", 400, queue.CodeInvalidEventID},
		{"unknown event", "/v1/events/nosuch-" + h.ev + "/holds/A-1", 404, queue.CodeEventNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := h.call(t, "GET", tc.path, "", alice); code != tc.status || errCode(body) != tc.code {
				t.Fatalf("GET %s: %d %s, want %d %s", tc.path, code, body, tc.status, tc.code)
			}
		})
	}
	// Carol's slot ends: C-1 is free at once, before any tick expires her.
	h.clock.Add(11 * time.Second)
	if code, body := h.call(t, "GET", item+"C-1", "", carol); code != 200 || !strings.Contains(string(body), `"state":"free"`) {
		t.Fatalf("GET C-1 after carol's slot ended: %d %s", code, body)
	}
}

// TestHoldsExpiredMetric: waitq_holds_expired_total counts every hold
// that ended unconfirmed and not given back because its holder's slot
// ended: released (the release route), expired (the slot monitor's tick
// expires the buyer), or found ended and taken by another buyer first; a
// confirmed item, a hold given back and a live hold are not counted.
func TestHoldsExpiredMetric(t *testing.T) {
	t.Parallel()
	h := startHoldsWith(t, 2, gateway.Config{AdmitInterval: 50 * time.Millisecond})
	alice, bob := h.admit(t, "alice", time.Minute), h.admit(t, "bob", time.Minute)
	carol, dave := h.admit(t, "carol", 10*time.Second), h.admit(t, "dave", 10*time.Second)
	for _, hold := range []struct{ token, item string }{
		{alice, "A-1"}, {alice, "A-2"}, {bob, "B-1"}, {bob, "B-2"}, {carol, "C-1"}, {dave, "D-1"},
	} {
		if code, body := h.hold(t, hold.token, hold.item); code != 201 {
			t.Fatalf("hold %s: %d %s", hold.item, code, body)
		}
	}
	holds := "/v1/events/" + h.ev + "/holds/"
	if code, _ := h.call(t, "POST", holds+"A-2/confirm", `{"token":"`+alice+`"}`, testShopToken); code != 200 {
		t.Fatal("confirm A-2")
	}
	if code, _ := h.call(t, "DELETE", holds+"B-2", "", bob); code != 204 {
		t.Fatal("delete B-2")
	}
	// Bob releases his slot: B-1 ends (1).
	if code, _ := h.call(t, "POST", "/v1/events/"+h.ev+"/release", `{"token":"`+bob+`"}`, ""); code != 200 {
		t.Fatal("release bob")
	}
	// Carol's and dave's slots end; erin takes D-1 before a tick expires
	// dave (2); the tick expires carol and dave: C-1 ends (3).
	h.clock.Add(11 * time.Second)
	erin := h.admit(t, "erin", time.Minute)
	if code, body := h.hold(t, erin, "D-1"); code != 201 {
		t.Fatalf("erin holds D-1: %d %s", code, body)
	}
	want := `waitq_holds_expired_total{event="` + h.ev + `"} 3`
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, metrics := h.call(t, "GET", "/metrics", "", "")
		if strings.Contains(string(metrics), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack %s:\n%s", want, grepLines(metrics, "waitq_holds_"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := h.call(t, "GET", holds+"C-1", "", ""); code != 200 || !strings.Contains(string(body), `"state":"free"`) {
		t.Fatalf("C-1 after carol expired: %d %s", code, body)
	}
	// Ticks go on: nothing is counted twice.
	time.Sleep(300 * time.Millisecond)
	if _, metrics := h.call(t, "GET", "/metrics", "", ""); !strings.Contains(string(metrics), want) {
		t.Fatalf("the count moved on:\n%s", grepLines(metrics, "waitq_holds_"))
	}
}

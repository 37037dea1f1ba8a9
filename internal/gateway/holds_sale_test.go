package gateway_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/entry"
)

// TestASaleTakesTheShopToken: a buyer alone, with nothing but their own
// entry token (in the body, as the bearer, or both), cannot confirm the
// item they hold: 401 unauthorized and the item stays held, not sold. The
// shop's token sells it; undoing the sale takes the shop token too and
// frees the item for another buyer; pkg/entry's client sends it.
func TestASaleTakesTheShopToken(t *testing.T) {
	t.Parallel()
	h := startHolds(t, 1)
	alice, bob := h.admit(t, "alice", time.Minute), h.admit(t, "bob", time.Minute)
	holds := "/v1/events/" + h.ev + "/holds"
	if code, body := h.hold(t, alice, "A-1"); code != 201 {
		t.Fatalf("hold: %d %s", code, body)
	}
	for _, bearer := range []string{"", alice, "e2.forged.x.y", testShopToken[:len(testShopToken)-1]} {
		code, body := h.call(t, "POST", holds+"/A-1/confirm", `{"token":"`+alice+`"}`, bearer)
		if code != 401 || errCode(body) != queue.CodeUnauthorized {
			t.Fatalf("confirm by the buyer alone (bearer %.10q): %d %s, want 401 unauthorized", bearer, code, body)
		}
	}
	state := func() queue.ItemHold {
		t.Helper()
		code, body := h.call(t, "GET", holds+"/A-1", "", "")
		var it queue.ItemHold
		if err := json.Unmarshal(body, &it); code != 200 || err != nil {
			t.Fatalf("item: %d %s", code, body)
		}
		return it
	}
	if it := state(); it.State != queue.ItemHeld {
		t.Fatalf("after the refused confirms A-1 is %s, want held", it.State)
	}

	c := &entry.Holds{GatewayURL: h.srv.URL, EventID: h.ev}
	if _, err := c.Confirm(t.Context(), alice, "A-1"); !errors.Is(err, entry.ErrShopRefused) {
		t.Fatalf("client confirm without ShopToken: %v, want %v", err, entry.ErrShopRefused)
	}
	c.ShopToken = testShopToken
	if sale, err := c.Confirm(t.Context(), alice, "A-1"); err != nil || sale.UserID != "alice" {
		t.Fatalf("confirm with the shop token: %+v %v", sale, err)
	}
	if it := state(); it.State != queue.ItemSold {
		t.Fatalf("after the shop's confirm A-1 is %s, want sold", it.State)
	}

	// The undo: refused without the shop token (the sale stands), done with it.
	if code, body := h.call(t, "DELETE", holds+"/A-1/sale", "", alice); code != 401 || errCode(body) != queue.CodeUnauthorized {
		t.Fatalf("unsell by the buyer: %d %s", code, body)
	}
	if it := state(); it.State != queue.ItemSold {
		t.Fatalf("after a refused unsell A-1 is %s, want sold", it.State)
	}
	if sale, undone, err := c.Unsell(t.Context(), "A-1"); err != nil || !undone || sale.UserID != "alice" {
		t.Fatalf("unsell: %+v %v %v", sale, undone, err)
	}
	if _, undone, err := c.Unsell(t.Context(), "A-1"); err != nil || undone {
		t.Fatalf("unsell again: %v %v, want not sold", undone, err)
	}
	if it := state(); it.State != queue.ItemFree {
		t.Fatalf("after the unsell A-1 is %s, want free", it.State)
	}
	// Free for bob; alice's limit no longer counts it.
	if code, body := h.hold(t, bob, "A-1"); code != 201 {
		t.Fatalf("bob holds the unsold A-1: %d %s", code, body)
	}
	if code, body := h.hold(t, alice, "A-2"); code != 201 {
		t.Fatalf("alice holds A-2 after her sale was undone: %d %s", code, body)
	}
	_, metrics := h.call(t, "GET", "/metrics", "", "")
	for _, want := range []string{
		`waitq_items_sold_total{event="` + h.ev + `"} 1`,
		`waitq_items_unsold_total{event="` + h.ev + `"} 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

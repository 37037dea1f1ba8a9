package gateway_test

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/waitq/waitq/pkg/entry"
)

// TestHoldsClient: pkg/entry's client of the hold routes, against a
// gateway: hold, the same hold again, every refusal as its error, release
// and confirm, one item (Get), the seat map.
func TestHoldsClient(t *testing.T) {
	t.Parallel()
	h := startHolds(t, 1)
	alice, bob := h.admit(t, "alice", time.Minute), h.admit(t, "bob", time.Minute)
	c := &entry.Holds{GatewayURL: h.srv.URL, EventID: h.ev, ShopToken: testShopToken}
	ctx := t.Context()

	hold, created, err := c.Hold(ctx, alice, "row1-seat1")
	if err != nil || !created || hold.UserID != "alice" || hold.Item != "row1-seat1" || hold.ExpiresAt == 0 {
		t.Fatalf("hold: %+v %v %v", hold, created, err)
	}
	if again, created, err := c.Hold(ctx, alice, "row1-seat1"); err != nil || created || again != hold {
		t.Fatalf("hold again: %+v %v %v", again, created, err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"held", second(c.Hold(ctx, bob, "row1-seat1")), entry.ErrItemHeld},
		{"limit", second(c.Hold(ctx, alice, "row1-seat2")), entry.ErrHoldLimit},
		{"bad item", second(c.Hold(ctx, bob, "row 1")), entry.ErrBadItem},
		{"bad token", second(c.Hold(ctx, "e2.nope", "row1-seat2")), entry.ErrTokenRefused},
		{"release by another", c.Release(ctx, bob, "row1-seat1"), entry.ErrNotHolder},
		{"confirm by another", func() error { _, err := c.Confirm(ctx, bob, "row1-seat1"); return err }(), entry.ErrNotHolder},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if sale, err := c.Confirm(ctx, alice, "row1-seat1"); err != nil || sale.UserID != "alice" {
		t.Fatalf("confirm: %+v %v", sale, err)
	}
	if _, _, err := c.Hold(ctx, bob, "row1-seat2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, bob, "row1-seat2"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Hold(ctx, bob, "row1-seat3"); err != nil {
		t.Fatal(err)
	}
	// Get: one item, the user id only to the holder's own token.
	for _, tc := range []struct {
		token, item string
		want        entry.ItemStatus
	}{
		{bob, "row1-seat3", entry.ItemStatus{State: "held", UserID: "bob"}},
		{"", "row1-seat3", entry.ItemStatus{State: "held"}},
		{alice, "row1-seat3", entry.ItemStatus{State: "held"}},
		{alice, "row1-seat1", entry.ItemStatus{State: "sold", UserID: "alice"}},
		{bob, "row1-seat1", entry.ItemStatus{State: "sold"}},
		{"", "row1-seat2", entry.ItemStatus{State: "free"}},
	} {
		got, err := c.Get(ctx, tc.token, tc.item)
		tc.want.EventID, tc.want.Item = h.ev, tc.item
		if tc.want.State == "held" {
			tc.want.ExpiresAt = got.ExpiresAt
		}
		if err != nil || got != tc.want || (tc.want.State == "held" && got.ExpiresAt <= h.clock.Now().UnixMilli()) {
			t.Errorf("get %s: %+v %v, want %+v", tc.item, got, err, tc.want)
		}
	}
	if _, err := c.Get(ctx, "", "row 1"); !errors.Is(err, entry.ErrBadItem) {
		t.Errorf("get a bad item: %v, want %v", err, entry.ErrBadItem)
	}
	items, err := c.Items(ctx)
	if want := map[string]string{"row1-seat1": "sold", "row1-seat3": "held"}; err != nil || !maps.Equal(items, want) {
		t.Fatalf("items: %v %v, want %v", items, err, want)
	}
}

// second returns the error of a Hold call.
func second(_ entry.Hold, _ bool, err error) error { return err }

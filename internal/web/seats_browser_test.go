package web_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestSeatMapInARealBrowser walks a buyer of the seated ticket, in
// chromium, as the devstack wires it: the demo shop behind waitq-guard
// (WAITQ_FORWARD_TOKEN) with a seat map over the gateway's seat holds.
// Admitted, the buyer sees the seat another buyer holds greyed, holds a
// free one, places the order, and the seat is sold.
func TestSeatMapInARealBrowser(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	sys := st.sys
	ctx := context.Background()
	ev := testenv.EventID(t)

	origin := httptest.NewServer(must(demoshop.New(demoshop.Config{GatewayURL: st.page, EventID: ev, ShopToken: testShopToken})))
	t.Cleanup(origin.Close)
	shop, _ := guardedShop(t, st, ev, origin.URL, 2, true)
	// Another buyer, admitted, holds A2.
	if err := sys.Store.Client().ZAdd(ctx, redisstore.HoldersKey(ev), redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: "other"}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Store.Hold(ctx, ev, "other", "A2", time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}

	bctx := browser(t, chrome)
	product := shop.URL + "/product/2"
	if err := chromedp.Run(bctx,
		chromedp.Navigate(product),
		chromedp.WaitVisible("#line"),
		text("#position", "1"),
	); err != nil {
		t.Fatalf("join in the waiting room: %v", err)
	}
	st.gw.MonitorTick(ctx)
	var taken, free string
	var disabled bool
	if err := chromedp.Run(bctx,
		chromedp.WaitVisible(".seatmap"),
		chromedp.AttributeValue(`button[value="A2"]`, "class", &taken, nil),
		chromedp.AttributeValue(`button[value="A1"]`, "class", &free, nil),
		chromedp.Evaluate(`document.querySelector('button[value="A2"]').disabled`, &disabled),
	); err != nil {
		t.Fatalf("the seat map: %v", err)
	}
	if !strings.Contains(taken, "taken") || !disabled || strings.Contains(free, "taken") {
		t.Fatalf("A2 held by another: class %q disabled %v; A1: class %q", taken, disabled, free)
	}
	// Submitted after the evaluation returns (a click that navigates can
	// fail its own call); a read that meets the navigation fails, the next
	// reads the new page.
	submit := func(sel string) {
		t.Helper()
		js := fmt.Sprintf(`setTimeout(() => document.querySelector(%q).click(), 0)`, sel)
		if err := chromedp.Run(bctx, chromedp.Evaluate(js, nil)); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}
	waitText := func(sel, want string) {
		t.Helper()
		testenv.Eventually(t, 10*time.Second, func() (bool, string) {
			var got string
			err := chromedp.Run(bctx, chromedp.Text(sel, &got, chromedp.ByQuery))
			return err == nil && strings.Contains(got, want), fmt.Sprintf("%s: %q, %v", sel, got, err)
		})
	}
	submit(`button[value="A1"]`)
	waitText("#held", "Seat A1 is held for you")
	submit("#place")
	waitText("h1", "Order placed")
	waitText("main", "Seat A1 is yours")
	items, err := sys.Store.Items(ctx, ev, time.Now().UnixMilli())
	if err != nil || items["A1"] != queue.ItemSold || items["A2"] != queue.ItemHeld {
		t.Fatalf("items after the order: %v %v", items, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestConsoleShowsTurnsArrivalsAndNoShows: the events table's turns column
// shows an away event's away, called and lapsed people, and an event with
// an arrival window its arrivals and no-shows.
func TestConsoleShowsTurnsArrivalsAndNoShows(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "admin-secret")
	ev := testenv.EventID(t)
	e := st.sys.CreateEvent(ev, 4, 1)
	e.StaySeconds, e.ArrivalSeconds, e.Away = 60, 20, queue.DefaultAway()
	if _, err := st.sys.Store.PutEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	c := st.sys.Store.Client()
	c.HSet(context.Background(), redisstore.StatsKey(ev), "arrivedTotal", 7, "noShowTotal", 3, "lapsedTotal", 2)
	ctx := browser(t, chrome)
	cell := fmt.Sprintf(`[...document.querySelectorAll("#events tbody tr")].some(r => r.cells[0].textContent === %q && r.cells[12].textContent.includes("2 lapsed") && r.cells[12].textContent.includes("7 arrived, 3 no-shows"))`, ev)
	if err := chromedp.Run(ctx,
		chromedp.Navigate(st.page+"/admin.html"),
		chromedp.SetValue("#admin-token", "admin-secret", chromedp.ByQuery),
		chromedp.Click(`#auth button`, chromedp.ByQuery),
		chromedp.Poll(cell, nil, chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		t.Fatalf("console turns: %v", err)
	}
}

package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestResumeOnAnotherDeviceInARealBrowser: a place joined in one browser
// profile (A) is carried by its resume link to another (B), a device of
// its own: B shows the same position, A's page says its place moved, and
// the store agrees.
func TestResumeOnAnotherDeviceInARealBrowser(t *testing.T) {
	chrome := chromium(t)
	st := startStack(t, "t")
	ev := testenv.EventID(t)
	st.sys.CreateEvent(ev, 1, 1)
	st.sys.Join(ev, "ahead", 1)

	a := browser(t, chrome)
	var userA, link string
	if err := chromedp.Run(a,
		joinInPage(st.page+"/?event="+ev, &userA),
		chromedp.WaitVisible("#line"),
		text("#position", "2"),
		chromedp.Click("#resume-offer", chromedp.ByQuery),
		chromedp.WaitVisible("#resume-box"),
		chromedp.Poll(`document.querySelector("#resume-url").value.includes("resume=")`, nil),
		chromedp.Value("#resume-url", &link),
		eval(`document.querySelector("#resume-qr svg path") !== null`),
	); err != nil {
		t.Fatalf("the link in profile A: %v", err)
	}
	if !strings.HasPrefix(link, st.page+"/?event="+ev+"&resume=rs1.") {
		t.Fatalf("link %q, want the page's address with the event and the token", link)
	}

	b := browser(t, chrome)
	var userB string
	if err := chromedp.Run(b,
		chromedp.Navigate(link),
		placeUser(&userB),
		chromedp.WaitVisible("#line"),
		text("#position", "2"),
		eval(`!location.search.includes("resume=")`),
	); err != nil {
		t.Fatalf("the link opened in profile B: %v", err)
	}
	if userB == userA || !queue.IsVisitorID(userB) {
		t.Fatalf("profile B holds the place as %q (A was %q): want a visitor of its own", userB, userA)
	}
	if err := chromedp.Run(a,
		chromedp.WaitVisible("#released"),
		text("#released", "Your place moved to another device. Continue there; this page no longer holds a place."),
	); err != nil {
		t.Fatalf("profile A after the move: %v", err)
	}
	if got := st.sys.WaitingIDs(ev); len(got) != 2 || got[1] != userB {
		t.Fatalf("line %v, want ahead and profile B's visitor", got)
	}
}

package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/entry"
)

// eventSeries returns the series of the gateway's registry (its /metrics)
// that carry an event label naming another event than the test's own (whose
// series the monitor may add at any tick), and those naming an event id
// with prefix.
func eventSeries(t *testing.T, h holdEnv, prefix string) (others, named int) {
	t.Helper()
	code, body := h.call(t, "GET", "/metrics", "", "")
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	for l := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(l, "#") || !strings.Contains(l, `event="`) || strings.Contains(l, `event="`+h.ev+`"`) {
			continue
		}
		others++
		if strings.Contains(l, `event="`+prefix) {
			named++
		}
	}
	return others, named
}

// TestMadeUpEventsLeaveNothingBehind: 200 requests to every event route,
// each for an event id nobody created, add no metric series and nothing
// the gateway keeps per event: each is refused 404 event_not_found (or
// answered as for no event) before anything is counted.
func TestMadeUpEventsLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	h := startHolds(t, 1)
	alice := h.admit(t, "alice", time.Minute)
	if code, body := h.hold(t, alice, "A-1"); code != 201 { // the real event's series exist
		t.Fatalf("hold: %d %s", code, body)
	}
	if code, body := h.hold(t, "e2.forged.x.y", "A-2"); code != 401 {
		t.Fatalf("forged hold: %d %s", code, body)
	}
	const prefix = "madeup"
	before, _ := eventSeries(t, h, prefix)
	keyed := h.gw.EventKeyed()
	for i := range 200 {
		ev := fmt.Sprintf("%s-%03d", prefix, i)
		base := "/v1/events/" + ev
		// A token signed for the made-up event: as good as a forger's
		// (a real one names a real event), better than garbage.
		tok := h.entry.Sign(entry.Token{EventID: ev, UserID: "mallory", Expires: h.clock.Now().Add(time.Minute).UnixMilli()})
		for _, c := range []struct{ method, path, body, bearer string }{
			{"POST", base + "/holds", `{"token":"` + tok + `","item":"A-1"}`, ""},
			{"POST", base + "/holds", `{"token":"x","item":"A-1"}`, ""},
			{"POST", base + "/holds", `{"token":"x","item":"bad item"}`, ""},
			{"DELETE", base + "/holds/A-1", "", tok},
			{"POST", base + "/holds/A-1/confirm", `{"token":"` + tok + `"}`, testShopToken},
			{"DELETE", base + "/holds/A-1/sale", "", testShopToken},
			{"GET", base + "/holds", "", ""},
			{"GET", base + "/holds/A-1", "", tok},
			{"POST", base + "/release", `{"token":"` + tok + `"}`, ""},
			{"GET", base + "/released", "", ""},
			{"GET", base + "/status?ticket=x", "", ""},
			{"POST", "/v1/entry/verify", `{"token":"` + tok + `"}`, ""},
		} {
			if code, body := h.call(t, c.method, c.path, c.body, c.bearer); code >= 500 {
				t.Fatalf("%s %s: %d %s", c.method, c.path, code, body)
			}
		}
	}
	after, named := eventSeries(t, h, prefix)
	if after != before || named != 0 {
		t.Errorf("series with another event's label: %d before, %d after 200 made-up events (%d naming one)", before, after, named)
	}
	if n := h.gw.EventKeyed(); n != keyed {
		t.Errorf("kept per event: %d before, %d after 200 made-up events", keyed, n)
	}
	if code, body := h.hold(t, alice, "A-1"); code != 200 { // the real event still works
		t.Fatalf("hold again: %d %s", code, body)
	}
}

// TestBuyerCallsAreRateLimited: the buyer's calls (hold, give back,
// release, verify) share one budget per client address (HoldLimit), as
// joins do at producer-api; past it 429 rate_limited with Retry-After.
// The shop's sale, which bears its credential, is not counted.
func TestBuyerCallsAreRateLimited(t *testing.T) {
	t.Parallel()
	h := startHoldsWith(t, 5, gateway.Config{HoldLimit: httpkit.RateLimit{PerSecond: 0.001, Burst: 4}})
	alice := h.admit(t, "alice", time.Minute)
	holds := "/v1/events/" + h.ev + "/holds"
	for i, c := range []struct{ method, path, body, bearer string }{
		{"POST", holds, `{"token":"` + alice + `","item":"A-1"}`, ""},
		{"DELETE", holds + "/A-2", "", alice},
		{"POST", "/v1/entry/verify", `{"token":"` + alice + `"}`, ""},
		{"POST", holds, `{"token":"` + alice + `","item":"A-3"}`, ""},
	} {
		if code, body := h.call(t, c.method, c.path, c.body, c.bearer); code >= 400 {
			t.Fatalf("call %d within the burst: %d %s", i, code, body)
		}
	}
	// The burst is spent: every buyer's route is refused, the sale is not.
	for _, c := range []struct{ method, path, body, bearer string }{
		{"POST", holds, `{"token":"` + alice + `","item":"A-4"}`, ""},
		{"DELETE", holds + "/A-1", "", alice},
		{"POST", "/v1/entry/verify", `{"token":"` + alice + `"}`, ""},
		{"POST", "/v1/events/" + h.ev + "/release", `{"token":"` + alice + `"}`, ""},
	} {
		if code, body := h.call(t, c.method, c.path, c.body, c.bearer); code != http.StatusTooManyRequests || errCode(body) != queue.CodeRateLimited {
			t.Errorf("%s %s past the burst: %d %s, want 429 rate_limited", c.method, c.path, code, body)
		}
	}
	if code, body := h.call(t, "POST", holds+"/A-1/confirm", `{"token":"`+alice+`"}`, testShopToken); code != 200 {
		t.Fatalf("the shop's confirm past the buyer's burst: %d %s", code, body)
	}
}

package guard_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/guard"
)

// testReportToken is the event's report token the fixtures' gateway takes
// arrivals with.
const testReportToken = "the-events-report-token-0123456789"

// arrived waits for the gateway's arrivals and reports the tokens that came
// within wait.
func (f *fixture) arrived(wait time.Duration) []string {
	f.guard.Wait()
	var got []string
	for {
		select {
		case tok := <-f.arrivals:
			got = append(got, tok)
		case <-time.After(wait):
			return got
		}
	}
}

// TestArrivalsAreReported: with the event's report token (WAITQ_HEALTH_TOKEN)
// and the gateway, the guard reports a token's first request from the
// waiting room as its arrival, through its proxy and its forward-auth
// endpoint alike, and the requests with the cookie after it not; without
// the token it reports nothing.
func TestArrivalsAreReported(t *testing.T) {
	for _, fa := range []bool{false, true} {
		f := newFixture(t, func(c *guard.Config) {
			c.Report.Token = testReportToken
			if fa {
				c.ForwardAuth, c.TrustedProxies, c.Protect = true, []string{"127.0.0.1", "::1"}, []string{"/product/"}
			}
		})
		tok := f.token("alice")
		get := func(uri, cookie string) *http.Response {
			if fa {
				resp, _ := f.ask(t, http.MethodGet, uri, cookie)
				return resp
			}
			resp, _ := f.do(t, http.MethodGet, uri, cookie)
			return resp
		}
		if resp := get("/product/1?waitq_token="+tok, ""); resp.StatusCode != http.StatusFound {
			t.Fatalf("forward-auth %v: arrival answered %d, want 302", fa, resp.StatusCode)
		}
		if got := f.arrived(100 * time.Millisecond); len(got) != 1 || got[0] != tok {
			t.Fatalf("forward-auth %v: arrivals %q, want the token once", fa, got)
		}
		get("/product/2", "waitq_entry_"+event+"="+tok)
		if got := f.arrived(100 * time.Millisecond); len(got) != 0 {
			t.Fatalf("forward-auth %v: a request with the cookie reported %d arrivals", fa, len(got))
		}
	}
	f := newFixture(t, nil)
	f.do(t, http.MethodGet, "/product/1?waitq_token="+f.token("bob"), "")
	if got := f.arrived(100 * time.Millisecond); len(got) != 0 {
		t.Fatalf("without the report token: %d arrivals", len(got))
	}
}

package producer_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestFloodFromOneAddressIsLimited: past its burst one client address gets
// 429 with Retry-After, whatever X-Forwarded-For it claims; other clients
// behind a trusted proxy keep joining. The direct clients have no identity:
// within the burst their joins reach the door (missing_identity).
func TestFloodFromOneAddressIsLimited(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	limit := httpkit.RateLimit{PerSecond: 0.5, Burst: 3}
	direct := startAPI(t, sys, producer.Config{AdminToken: adminToken, JoinLimit: limit})
	ev := testenv.EventID(t)
	if r := direct.putEvent(t, ev, `{"capacity":5}`); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	join := func(e *apiEnv, user, xff string) reply {
		h := map[string]string{httpkit.UserHeader: user}
		if xff != "" {
			h["X-Forwarded-For"] = xff
		}
		return e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", h, nil)
	}
	for i := range 3 {
		if r := join(direct, "flooder"+strconv.Itoa(i), ""); r.status != 401 || r.errorCode(t) != queue.CodeMissingIdentity {
			t.Fatalf("join %d within the burst: %d %s", i, r.status, r.body)
		}
	}
	for _, xff := range []string{"", "198.51.100.1", "198.51.100.2"} {
		r := join(direct, "flooder", xff)
		if r.status != 429 || r.errorCode(t) != queue.CodeRateLimited {
			t.Fatalf("flood with X-Forwarded-For %q: %d %s", xff, r.status, r.body)
		}
		if s, _ := strconv.Atoi(r.header.Get("Retry-After")); s < 1 {
			t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
		}
	}

	// Behind a trusted proxy (the test client is 127.0.0.1) each client has
	// its own bucket.
	proxied := startAPI(t, sys, producer.Config{TrustUserHeader: true, JoinLimit: limit, TrustedProxies: []string{"127.0.0.1"}})
	for range 3 {
		join(proxied, "a", "198.51.100.1")
	}
	if r := join(proxied, "a", "198.51.100.1"); r.status != 429 {
		t.Fatalf("client 198.51.100.1 past its burst: %d", r.status)
	}
	if r := join(proxied, "b", "198.51.100.2"); r.status != 202 {
		t.Fatalf("another client behind the proxy: %d %s", r.status, r.body)
	}
}

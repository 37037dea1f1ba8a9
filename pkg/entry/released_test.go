package entry_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/pkg/entry"
)

// releasedServer is the gateway's GET /v1/events/{eventId}/released: it
// lists the jtis it was given, or answers 503 while down.
type releasedServer struct {
	*httptest.Server
	jtis atomic.Pointer[[]string]
	down atomic.Bool
}

func newReleasedServer(t *testing.T) *releasedServer {
	t.Helper()
	s := &releasedServer{}
	s.list()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() || r.URL.Path != "/v1/events/"+event+"/released" {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		type item struct {
			JTI string `json:"jti"`
			Exp int64  `json:"exp"`
		}
		l := []item{}
		for _, j := range *s.jtis.Load() {
			l = append(l, item{JTI: j, Exp: now.Add(time.Hour).Unix()})
		}
		json.NewEncoder(w).Encode(map[string]any{"eventId": event, "released": l})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *releasedServer) list(jtis ...string) { s.jtis.Store(&jtis) }

// TestGuardRefusesReleasedTokens: a token whose jti the gateway lists is
// refused (reason released, cookie cleared, sent to the line) though it
// verifies and was cached as valid; a failed poll keeps the last list.
func TestGuardRefusesReleasedTokens(t *testing.T) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	srv := newReleasedServer(t)
	released := entry.NewReleasedSource(entry.ReleasedURL(srv.URL+"/", event), srv.Client())
	f := newFixture(t, k1, func(c *entry.GuardConfig) { c.Released = released })
	alice := k1.Sign(claims(event, "alice", 10*time.Minute))
	bob := k1.Sign(claims(event, "bob", 10*time.Minute))
	legacy := entry.SignLegacy("k1", seed(1), claims(event, "carol", 10*time.Minute))
	ctx := context.Background()

	if released.Released(entry.AdmissionID(event, "alice", claims(event, "alice", 10*time.Minute).Expires)) {
		t.Fatal("listed before any fetch")
	}
	for _, tok := range []string{alice, bob, legacy} { // cached as valid
		if r := f.do(http.MethodGet, "http://shop.example/", tok, ""); r.StatusCode != http.StatusOK {
			t.Fatalf("before the release: %d", r.StatusCode)
		}
		<-f.decisions
	}
	srv.list(entry.AdmissionID(event, "alice", claims(event, "alice", 10*time.Minute).Expires),
		entry.AdmissionID(event, "carol", claims(event, "carol", 10*time.Minute).Expires))
	if err := released.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, tok := range []string{alice, legacy} {
			r := f.do(http.MethodGet, "http://shop.example/", tok, "")
			d := <-f.decisions
			if r.StatusCode != http.StatusFound || d.Outcome != entry.SentToLine || entry.Reason(d.CookieErr) != "released" ||
				!strings.Contains(r.Header.Get("Set-Cookie"), "Max-Age=0") {
				t.Fatalf("%s: a released token got %d, %v (%q), Set-Cookie %q", when, r.StatusCode, d.Outcome, entry.Reason(d.CookieErr), r.Header.Get("Set-Cookie"))
			}
		}
		if r := f.do(http.MethodGet, "http://shop.example/?waitq_token="+alice, "", ""); r.StatusCode != http.StatusFound ||
			!strings.HasPrefix(r.Header.Get("Location"), room) {
			t.Fatalf("%s: a released token in the query got %d to %q", when, r.StatusCode, r.Header.Get("Location"))
		}
		if d := <-f.decisions; entry.Reason(d.QueryErr) != "released" {
			t.Fatalf("%s: query reason %q", when, entry.Reason(d.QueryErr))
		}
		if r := f.do(http.MethodGet, "http://shop.example/", bob, ""); r.StatusCode != http.StatusOK {
			t.Fatalf("%s: a token not released got %d", when, r.StatusCode)
		}
		<-f.decisions
	}
	check("listed")
	srv.down.Store(true)
	if err := released.Refresh(ctx); err == nil {
		t.Fatal("a failed fetch reported no error")
	}
	check("after a failed poll")

	// Run's failures reach onErr and keep the list.
	var errs atomic.Int64
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); released.Run(rctx, 10*time.Millisecond, func(error) { errs.Add(1) }) }()
	for deadline := time.Now().Add(5 * time.Second); errs.Load() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Run reported no failure")
		}
	}
	check("while polls fail")
	srv.down.Store(false)
	srv.list()
	for deadline := time.Now().Add(5 * time.Second); released.Released(entry.AdmissionID(event, "alice", claims(event, "alice", 10*time.Minute).Expires)); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Run did not take the new list")
		}
	}
	cancel()
	<-done
}

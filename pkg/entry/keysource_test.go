package entry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/pkg/entry"
)

// TestJWKSRotationNotDelayedByMadeUpKeyIDs: neither a periodic refresh nor
// a token with a made-up key id keeps the first token of a real rotation
// from fetching the new keys at once (or, after a made-up one, within
// DefaultMinRefresh, a second).
func TestJWKSRotationNotDelayedByMadeUpKeyIDs(t *testing.T) {
	ctx := context.Background()
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	srv := newJWKSServer(t, k1)
	var clock atomic.Int64
	clock.Store(now.UnixMilli())
	keys := entry.NewKeySource(entry.KeySourceConfig{URL: srv.URL + "/.well-known/jwks.json", Client: srv.Client(),
		Now: func() time.Time { return time.UnixMilli(clock.Load()) }})
	if err := keys.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	verify := func(k *entry.Keyring, user string) error {
		_, err := keys.Verify(ctx, k.Sign(claims(event, user, time.Hour)), event, time.UnixMilli(clock.Load()))
		return err
	}
	// A periodic refresh (Run's), then the gateway rotates: the new key's
	// first token fetches it at once.
	clock.Add(time.Minute.Milliseconds())
	if err := keys.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	k2, _ := entry.NewKeyring("k2", seed(2), nil)
	srv.serve(k2)
	if err := verify(k2, "alice"); err != nil {
		t.Fatalf("the rotation's first token just after a periodic refresh: %v", err)
	}
	// A made-up key id fetches, and the gateway rotates just after it: the
	// next key's tokens verify a second later, not MinRefresh-of-old later.
	clock.Add(time.Minute.Milliseconds())
	forger, _ := entry.NewKeyring("made-up", seed(9), nil)
	if err := verify(forger, "mallory"); !errors.Is(err, entry.ErrUnknownKey) {
		t.Fatalf("made-up key id: %v", err)
	}
	k3, _ := entry.NewKeyring("k3", seed(3), nil)
	srv.serve(k3)
	clock.Add(time.Second.Milliseconds())
	if err := verify(k3, "bob"); err != nil {
		t.Fatalf("the rotation's first token a second after a made-up key id: %v", err)
	}
}

// TestJWKSRedirectNotFollowed: a JWKS that answers a redirect (to keys
// elsewhere) gives no keys.
func TestJWKSRedirectNotFollowed(t *testing.T) {
	forger, _ := entry.NewKeyring("k1", seed(9), nil)
	elsewhere := newJWKSServer(t, forger)
	redirect := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/.well-known/jwks.json", http.StatusFound))
	t.Cleanup(redirect.Close)
	keys := entry.NewKeySource(entry.KeySourceConfig{URL: redirect.URL + "/.well-known/jwks.json", Client: redirect.Client()})
	if err := keys.Refresh(context.Background()); err == nil || keys.Loaded() {
		t.Fatalf("a redirect followed: %v, loaded %v", err, keys.Loaded())
	}
	if n := elsewhere.fetches.Load(); n != 0 {
		t.Fatalf("the redirect's target was fetched %d times", n)
	}
	// The default client too.
	keys = entry.NewKeySource(entry.KeySourceConfig{URL: redirect.URL + "/.well-known/jwks.json"})
	if err := keys.Refresh(context.Background()); err == nil || elsewhere.fetches.Load() != 0 {
		t.Fatalf("the default client followed a redirect: %v", err)
	}
}

// TestJWKSPlainHTTPOnlyToLoopback: plain http:// is refused but to a
// loopback host (without a request), unless AllowHTTP; https:// is taken.
func TestJWKSPlainHTTPOnlyToLoopback(t *testing.T) {
	var asked atomic.Int64
	client := &http.Client{Transport: roundTripper(func(*http.Request) (*http.Response, error) {
		asked.Add(1)
		return nil, errors.New("no network in this test")
	})}
	for _, c := range []struct {
		url       string
		allowHTTP bool
		refused   bool
	}{
		{"http://gateway.example/.well-known/jwks.json", false, true},
		{"http://10.0.0.7:8081/.well-known/jwks.json", false, true},
		{"ftp://gateway.example/jwks.json", false, true},
		{"http://gateway.example/.well-known/jwks.json", true, false},
		{"https://gateway.example/.well-known/jwks.json", false, false},
		{"http://127.0.0.1:8081/.well-known/jwks.json", false, false},
		{"http://[::1]:8081/.well-known/jwks.json", false, false},
		{"http://localhost:8081/.well-known/jwks.json", false, false},
	} {
		before := asked.Load()
		keys := entry.NewKeySource(entry.KeySourceConfig{URL: c.url, Client: client, AllowHTTP: c.allowHTTP})
		err := keys.Refresh(context.Background())
		if refused := err != nil && strings.Contains(err.Error(), "want https://"); refused != c.refused || (asked.Load() > before) == c.refused {
			t.Errorf("%s (AllowHTTP %v): %v, %d requests; want refused %v", c.url, c.allowHTTP, err, asked.Load()-before, c.refused)
		}
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

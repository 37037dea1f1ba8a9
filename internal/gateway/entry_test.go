package gateway_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/entry"
)

// legacyToken mints an e2 token (the format before JWTs) with the key every
// gateway derives from ticketSecret, as a gateway of the previous release did.
func legacyToken(kid, ev, user string, expires int64) string {
	m := hmac.New(sha256.New, []byte(ticketSecret))
	m.Write([]byte("waitq entry ed25519 v1"))
	return testenv.LegacyEntryToken(kid, m.Sum(nil), ev, user, expires)
}

// TestEntryTokensIssuerAndUpgrade: the gateway's verify route requires its
// WAITQ_PUBLIC_URL as iss, still takes e2 tokens during the upgrade and
// counts them.
func TestEntryTokensIssuerAndUpgrade(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	cfg := fast
	cfg.PublicURL = "https://queue.example.test"
	e := startGateway(t, sys, cfg, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)

	verify := func(tok string) gateway.VerifyResponse {
		t.Helper()
		resp, err := http.Post(e.srv.URL+"/v1/entry/verify", "application/json", strings.NewReader(`{"token":"`+tok+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v gateway.VerifyResponse
		if err := json.NewDecoder(resp.Body).Decode(&v); resp.StatusCode != 200 || err != nil {
			t.Fatalf("verify: %d %v", resp.StatusCode, err)
		}
		return v
	}
	hold := time.Now().Add(time.Hour).UnixMilli()
	claims := entry.Token{EventID: ev, UserID: "u1", Expires: hold, IssuedAt: time.Now().UnixMilli()}
	if v := verify(e.entry.WithIssuer(cfg.PublicURL).Sign(claims)); v.State == "invalid" || v.UserID != "u1" {
		t.Fatalf("a token of the gateway's issuer: %+v", v)
	}
	if v := verify(e.entry.Sign(claims)); v.State != "invalid" || !strings.Contains(v.Reason, "issuer") {
		t.Fatalf("a token of the default issuer at a gateway with WAITQ_PUBLIC_URL: %+v", v)
	}
	if v := verify(legacyToken(e.entry.KeyID(), ev, "u1", hold)); v.State == "invalid" || v.UserID != "u1" || v.EventID != ev {
		t.Fatalf("an e2 token during the upgrade: %+v", v)
	}
	resp, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`waitq_gateway_legacy_entry_tokens_total{route="verify"} 1`)) {
		t.Errorf("the e2 token is not counted:\n%s", grepLines(body, "legacy"))
	}
	// The JWKS is RFC 8037's, served as before.
	resp, err = http.Get(e.srv.URL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	keys, err := entry.ParseJWKS(jwks)
	if err != nil || resp.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("jwks %s: %v", jwks, err)
	}
	keys.Issuer = cfg.PublicURL
	if tok, err := keys.Verify(e.entry.WithIssuer(cfg.PublicURL).Sign(claims), ev, time.Now()); err != nil || tok.Issuer != cfg.PublicURL {
		t.Fatalf("offline with the JWKS and the issuer: %+v %v", tok, err)
	}
}

func grepLines(b []byte, s string) string {
	var out []string
	for l := range strings.Lines(string(b)) {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

func TestPublicURLMustBeAbsolute(t *testing.T) {
	for _, bad := range []string{"queue.example.com", "ftp://queue.example.com", "https://"} {
		c := gateway.DefaultConfig()
		c.PublicURL = bad
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "WAITQ_PUBLIC_URL") {
			t.Errorf("WAITQ_PUBLIC_URL=%q: %v", bad, err)
		}
	}
	c := gateway.DefaultConfig()
	c.PublicURL = "https://queue.example.com"
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

package entry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/waitq/waitq/pkg/entry"
)

func BenchmarkSign(b *testing.B) {
	k, _ := entry.NewKeyring("k1", make([]byte, 32), nil)
	t := entry.Token{EventID: "sale1", UserID: "user@example.com", Expires: 2, IssuedAt: 1}
	b.ReportAllocs()
	for b.Loop() {
		k.Sign(t)
	}
}

// benchTokens are a JWT and, as the baseline, the e2 token of the format
// before (the old code path, still there for the upgrade) of one admission.
func benchTokens(now time.Time) (*entry.Keyring, map[string]string) {
	k, _ := entry.NewKeyring("k1", make([]byte, 32), nil)
	t := entry.Token{EventID: "sale1", UserID: "user@example.com", Expires: now.Add(time.Hour).UnixMilli(), IssuedAt: now.UnixMilli()}
	return k, map[string]string{"jwt": k.Sign(t), "e2": entry.SignLegacy("k1", make([]byte, 32), t)}
}

// BenchmarkVerify verifies with the key held (the cached key).
func BenchmarkVerify(b *testing.B) {
	now := time.Now()
	k, toks := benchTokens(now)
	for _, format := range []string{"jwt", "e2"} {
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.Verify(toks[format], "sale1", now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerifyCold verifies the first token of a new KeySource: the JWKS
// fetched from a gateway on loopback and parsed, then the token verified.
func BenchmarkVerifyCold(b *testing.B) {
	now := time.Now()
	k, toks := benchTokens(now)
	jwks := k.JWKS()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(jwks) }))
	defer srv.Close()
	for _, format := range []string{"jwt", "e2"} {
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				keys := entry.NewKeySource(entry.KeySourceConfig{URL: srv.URL, Client: srv.Client()})
				if _, err := keys.Verify(context.Background(), toks[format], "sale1", now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

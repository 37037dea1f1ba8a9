package jointoken_test

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/waitq/waitq/pkg/jointoken"
)

// FuzzVerify: Verify never panics, and nothing verifies but the honest
// tokens it was seeded with: a mutation of one (a changed character, a
// header added, a part cut) is always refused.
func FuzzVerify(f *testing.F) {
	hsK := mustKey(f)(jointoken.HMACKey("hs", secret(0)))
	edK := mustKey(f)(jointoken.Ed25519SigningKey("ed", edKey(1)))
	keys := []jointoken.Key{hsK, {ID: "ed", Alg: jointoken.EdDSA, PublicKey: edKey(1).Public().(ed25519.PublicKey)}}
	c := claims()
	c.NotBefore = now
	honest := map[string]bool{mustMint(f, hsK, c): true, mustMint(f, edK, c): true, mustMint(f, edK, claims()): true}
	for tok := range honest {
		f.Add(tok)
	}
	priv := edKey(1)
	exp := itoa(now.Add(time.Minute).Unix())
	for _, h := range []string{`{"alg":"none","kid":"ed"}`, `{"alg":"HS256","kid":"ed"}`, `{"alg":"EdDSA","kid":"ed","jku":"x"}`, `{"alg":"EdDSA","kid":"ed","crit":["b64"],"b64":false}`} {
		f.Add(forge(h, `{"sub":"a","aud":"e1","exp":`+exp+`}`, ed(priv)))
	}
	f.Add(forge(`{"alg":"HS256","kid":"ed"}`, `{"sub":"a","aud":"e1","exp":`+exp+`}`, hs(priv.Public().(ed25519.PublicKey))))
	f.Add("")
	f.Add("..")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := jointoken.Verify(token, keys, "e1", now)
		if err == nil && !honest[token] {
			t.Fatalf("a token never minted verified: %q → %+v", token, c)
		}
	})
}

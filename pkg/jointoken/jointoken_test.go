package jointoken_test

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/pkg/jointoken"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// secret returns a 32-byte HS256 secret of n.
func secret(n byte) []byte { return []byte(strings.Repeat(string(rune('a'+n)), 32)) }

// edKey returns the Ed25519 private key of seed n.
func edKey(n byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = n
	return ed25519.NewKeyFromSeed(seed)
}

// mustKey returns a function that passes a key through, failing the test
// on its error: mustKey(t)(jointoken.HMACKey(…)).
func mustKey(tb testing.TB) func(jointoken.Key, error) jointoken.Key {
	return func(k jointoken.Key, err error) jointoken.Key {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return k
	}
}

// mustMint mints c with k, failing the test on an error.
func mustMint(tb testing.TB, k jointoken.Key, c jointoken.Claims) string {
	tb.Helper()
	tok, err := jointoken.Mint(k, c)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// claims is a token for alice to event e1, valid for ten minutes from now.
func claims() jointoken.Claims {
	return jointoken.Claims{Subject: "alice", EventID: "e1", Expiry: now.Add(10 * time.Minute), IssuedAt: now, ID: "j-1"}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// forge makes a compact JWS of header and payload signed by sign over the
// signing input, as an attacker would, outside the library.
func forge(header, payload string, sign func([]byte) []byte) string {
	in := b64(header) + "." + b64(payload)
	return in + "." + base64.RawURLEncoding.EncodeToString(sign([]byte(in)))
}

func hs(key []byte) func([]byte) []byte {
	return func(b []byte) []byte { m := hmac.New(sha256.New, key); m.Write(b); return m.Sum(nil) }
}

func ed(priv ed25519.PrivateKey) func([]byte) []byte {
	return func(b []byte) []byte { return ed25519.Sign(priv, b) }
}

// decode returns the JSON of a token's part i (0 header, 1 claims).
func decode(t *testing.T, token string, i int) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[i])
	var m map[string]any
	if err != nil || json.Unmarshal(raw, &m) != nil {
		t.Fatalf("part %d of %q: %v", i, token, err)
	}
	return m
}

func TestRoundTrip(t *testing.T) {
	hmacKey := mustKey(t)(jointoken.HMACKey("shop-2026.a", secret(0)))
	edSigner := mustKey(t)(jointoken.Ed25519SigningKey("ed1", edKey(1)))
	edVerifier := mustKey(t)(jointoken.Ed25519Key("ed1", edKey(1).Public().(ed25519.PublicKey)))
	tests := []struct {
		name         string
		mint, verify jointoken.Key
		alg          string
	}{
		{"HS256", hmacKey, hmacKey, "HS256"},
		{"EdDSA, the public key alone", edSigner, edVerifier, "EdDSA"},
		{"EdDSA, the signing key", edSigner, edSigner, "EdDSA"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := claims()
			c.NotBefore = now.Add(-time.Minute)
			tok := mustMint(t, tc.mint, c)
			if h := decode(t, tok, 0); len(h) != 3 || h["alg"] != tc.alg || h["kid"] != tc.mint.ID || h["typ"] != "JWT" {
				t.Errorf("header %v", h)
			}
			want := map[string]any{"sub": "alice", "aud": "e1", "exp": float64(now.Unix() + 600), "iat": float64(now.Unix()),
				"nbf": float64(now.Unix() - 60), "jti": "j-1"}
			if got := decode(t, tok, 1); len(got) != len(want) {
				t.Errorf("claims %v, want %v", got, want)
			} else {
				for k, v := range want {
					if got[k] != v {
						t.Errorf("claim %s = %v, want %v", k, got[k], v)
					}
				}
			}
			got, err := jointoken.Verify(tok, []jointoken.Key{tc.verify}, "e1", now)
			c.KeyID = tc.mint.ID
			if err != nil || got.Subject != c.Subject || got.EventID != c.EventID || !got.Expiry.Equal(c.Expiry) ||
				!got.NotBefore.Equal(c.NotBefore) || !got.IssuedAt.Equal(c.IssuedAt) || got.ID != c.ID || got.KeyID != c.KeyID {
				t.Fatalf("Verify = %+v, %v; want %+v", got, err, c)
			}
		})
	}
}

// TestRotation: with two keys registered, tokens of each verify; once the
// old key is removed, its tokens are refused and the new key's still pass.
func TestRotation(t *testing.T) {
	old := mustKey(t)(jointoken.HMACKey("k-2025", secret(1)))
	next := mustKey(t)(jointoken.Ed25519SigningKey("k-2026", edKey(2)))
	oldTok, newTok := mustMint(t, old, claims()), mustMint(t, next, claims())
	both := []jointoken.Key{old, next}
	for _, tok := range []string{oldTok, newTok} {
		if _, err := jointoken.Verify(tok, both, "e1", now); err != nil {
			t.Errorf("during the overlap: %v", err)
		}
	}
	after := []jointoken.Key{next}
	if _, err := jointoken.Verify(newTok, after, "e1", now); err != nil {
		t.Errorf("the new key's token after the rotation: %v", err)
	}
	if _, err := jointoken.Verify(oldTok, after, "e1", now); !errors.Is(err, jointoken.ErrUnknownKey) {
		t.Errorf("the removed key's token: %v, want ErrUnknownKey", err)
	}
}

func TestAudienceArray(t *testing.T) {
	priv := edKey(1)
	k := mustKey(t)(jointoken.Ed25519Key("k1", priv.Public().(ed25519.PublicKey)))
	exp := now.Add(time.Minute).Unix()
	tok := forge(`{"alg":"EdDSA","kid":"k1"}`, `{"sub":"bob","aud":["e0","e1"],"exp":`+itoa(exp)+`}`, ed(priv))
	if c, err := jointoken.Verify(tok, []jointoken.Key{k}, "e1", now); err != nil || c.EventID != "e1" || c.Subject != "bob" || c.ID != "" {
		t.Fatalf("aud array holding the event: %+v, %v", c, err)
	}
	if _, err := jointoken.Verify(tok, []jointoken.Key{k}, "e2", now); !errors.Is(err, jointoken.ErrOtherEvent) {
		t.Fatalf("aud array without the event: %v", err)
	}
}

func TestKeyValidation(t *testing.T) {
	pub := edKey(1).Public().(ed25519.PublicKey)
	tests := []struct {
		name string
		key  jointoken.Key
		ok   bool
	}{
		{"HS256", jointoken.Key{ID: "a.b_c-1", Alg: "HS256", Secret: secret(0)}, true},
		{"EdDSA public", jointoken.Key{ID: "k", Alg: "EdDSA", PublicKey: pub}, true},
		{"EdDSA private alone", jointoken.Key{ID: "k", Alg: "EdDSA", PrivateKey: edKey(1)}, true},
		{"EdDSA both, matching", jointoken.Key{ID: "k", Alg: "EdDSA", PrivateKey: edKey(1), PublicKey: pub}, true},
		{"EdDSA both, not matching", jointoken.Key{ID: "k", Alg: "EdDSA", PrivateKey: edKey(2), PublicKey: pub}, false},
		{"kid empty", jointoken.Key{Alg: "HS256", Secret: secret(0)}, false},
		{"kid 65 chars", jointoken.Key{ID: strings.Repeat("k", 65), Alg: "HS256", Secret: secret(0)}, false},
		{"kid 64 chars", jointoken.Key{ID: strings.Repeat("k", 64), Alg: "HS256", Secret: secret(0)}, true},
		{"kid with a slash", jointoken.Key{ID: "a/b", Alg: "HS256", Secret: secret(0)}, false},
		{"secret of 31 bytes", jointoken.Key{ID: "k", Alg: "HS256", Secret: secret(0)[:31]}, false},
		{"HS256 with an Ed25519 key", jointoken.Key{ID: "k", Alg: "HS256", Secret: secret(0), PublicKey: pub}, false},
		{"EdDSA with a secret", jointoken.Key{ID: "k", Alg: "EdDSA", Secret: secret(0), PublicKey: pub}, false},
		{"EdDSA short public key", jointoken.Key{ID: "k", Alg: "EdDSA", PublicKey: pub[:31]}, false},
		{"EdDSA short private key", jointoken.Key{ID: "k", Alg: "EdDSA", PrivateKey: edKey(1)[:32]}, false},
		{"EdDSA without a key", jointoken.Key{ID: "k", Alg: "EdDSA"}, false},
		{"RS256", jointoken.Key{ID: "k", Alg: "RS256", Secret: secret(0)}, false},
		{"no alg", jointoken.Key{ID: "k", Secret: secret(0)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.key.Validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, jointoken.ErrKey)) {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestMintRefuses(t *testing.T) {
	hk := mustKey(t)(jointoken.HMACKey("k", secret(0)))
	verifyOnly := mustKey(t)(jointoken.Ed25519Key("k", edKey(1).Public().(ed25519.PublicKey)))
	for name, tc := range map[string]struct {
		key jointoken.Key
		c   jointoken.Claims
	}{
		"a verifying key": {verifyOnly, claims()},
		"a short secret":  {jointoken.Key{ID: "k", Alg: "HS256", Secret: []byte("short")}, claims()},
		"no subject":      {hk, jointoken.Claims{EventID: "e1", Expiry: now}},
		"no event":        {hk, jointoken.Claims{Subject: "a", Expiry: now}},
		"no expiry":       {hk, jointoken.Claims{Subject: "a", EventID: "e1"}},
	} {
		if tok, err := jointoken.Mint(tc.key, tc.c); err == nil {
			t.Errorf("%s: minted %s", name, tok)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

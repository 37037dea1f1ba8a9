package entry_test

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

	"github.com/waitq/waitq/pkg/entry"
)

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// header decodes a token's JOSE header.
func header(t *testing.T, token string) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	var h map[string]any
	if err != nil || json.Unmarshal(raw, &h) != nil {
		t.Fatalf("header of %q: %v", token, err)
	}
	return h
}

// mint makes a compact JWS of header and payload signed by sign over the
// signing input, as an attacker would, outside the library.
func mint(header, payload string, sign func([]byte) []byte) string {
	in := b64(header) + "." + b64(payload)
	return in + "." + base64.RawURLEncoding.EncodeToString(sign([]byte(in)))
}

func TestTokenIsAStandardJWT(t *testing.T) {
	k, _ := entry.NewKeyring("k1", seed(1), nil)
	k = k.WithIssuer("https://queue.example.com")
	tok := k.Sign(entry.Token{EventID: "sale1", UserID: "alice", Expires: now.Add(5*time.Minute).UnixMilli() + 135, IssuedAt: now.UnixMilli() + 7})
	if h := header(t, tok); len(h) != 3 || h["alg"] != "EdDSA" || h["typ"] != "JWT" || h["kid"] != "k1" {
		t.Fatalf("header %v", h)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	exp := float64(now.Add(5*time.Minute).Unix() + 1) // rounded up: never refused before the hold ends
	want := map[string]any{"iss": "https://queue.example.com", "sub": "alice", "aud": "sale1", "iat": float64(now.Unix()),
		"nbf": float64(now.Unix()), "exp": exp, "jti": entry.AdmissionID("sale1", "alice", now.Add(5*time.Minute).UnixMilli()+135),
		"exp_ms": float64(now.Add(5*time.Minute).UnixMilli() + 135)}
	for name, v := range want {
		if c[name] != v {
			t.Errorf("claim %s = %v, want %v", name, c[name], v)
		}
	}
	if len(c) != len(want) {
		t.Errorf("claims %v, want exactly %v", c, want)
	}
	// The signature is plain RFC 8037 EdDSA over the signing input.
	parts := strings.Split(tok, ".")
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if !ed25519.Verify(ed25519.NewKeyFromSeed(seed(1)).Public().(ed25519.PublicKey), []byte(parts[0]+"."+parts[1]), sig) {
		t.Error("the signature does not verify with the bare key")
	}
	if a, b := entry.AdmissionID("e", "u", 1), entry.AdmissionID("e", "u", 2); a == b || a != entry.AdmissionID("e", "u", 1) {
		t.Error("AdmissionID is not one per admission")
	}
}

// TestAlgorithmConfusionRefused: whatever the header says, the key is one of
// the JWK Set chosen by kid and the algorithm EdDSA.
func TestAlgorithmConfusionRefused(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(seed(1))
	pub := priv.Public().(ed25519.PublicKey)
	k, _ := entry.NewKeyring("k1", seed(1), nil)
	remote, err := entry.ParseJWKS(k.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	exp := now.Add(time.Minute)
	payload := `{"iss":"waitq","sub":"mallory","aud":"e1","iat":1700000000,"nbf":1700000000,"exp":` +
		itoa(exp.Unix()) + `,"jti":"j","exp_ms":` + itoa(exp.UnixMilli()) + `}`
	ed := func(b []byte) []byte { return ed25519.Sign(priv, b) }
	hs := func(key []byte) func([]byte) []byte {
		return func(b []byte) []byte { m := hmac.New(sha256.New, key); m.Write(b); return m.Sum(nil) }
	}
	jwkX := base64.RawURLEncoding.EncodeToString(pub)
	tests := []struct {
		name, token string
		want        error
	}{
		{"alg none", mint(`{"alg":"none","typ":"JWT","kid":"k1"}`, payload, func([]byte) []byte { return nil }), entry.ErrMalformed},
		{"alg none, no signature part", b64(`{"alg":"none"}`) + "." + b64(payload), entry.ErrMalformed},
		{"HS256 keyed with the public key", mint(`{"alg":"HS256","typ":"JWT","kid":"k1"}`, payload, hs(pub)), entry.ErrMalformed},
		{"HS256 keyed with the JWK's x", mint(`{"alg":"HS256","typ":"JWT","kid":"k1"}`, payload, hs([]byte(jwkX))), entry.ErrMalformed},
		{"RS256", mint(`{"alg":"RS256","typ":"JWT","kid":"k1"}`, payload, ed), entry.ErrMalformed},
		{"Ed25519 alg name (not EdDSA)", mint(`{"alg":"Ed25519","typ":"JWT","kid":"k1"}`, payload, ed), entry.ErrMalformed},
		{"kid we do not serve", mint(`{"alg":"EdDSA","typ":"JWT","kid":"k9"}`, payload, ed), entry.ErrUnknownKey},
		{"no kid", mint(`{"alg":"EdDSA","typ":"JWT"}`, payload, ed), entry.ErrMalformed},
		{"jku header", mint(`{"alg":"EdDSA","typ":"JWT","kid":"k1","jku":"https://evil.example/jwks.json"}`, payload, ed), entry.ErrMalformed},
		{"x5u header", mint(`{"alg":"EdDSA","typ":"JWT","kid":"k1","x5u":"https://evil.example/cert.pem"}`, payload, ed), entry.ErrMalformed},
		{"jwk header", mint(`{"alg":"EdDSA","typ":"JWT","kid":"k1","jwk":{"kty":"OKP","crv":"Ed25519","x":"`+jwkX+`"}}`, payload, ed), entry.ErrMalformed},
		{"crit header", mint(`{"alg":"EdDSA","typ":"JWT","kid":"k1","crit":["exp"]}`, payload, ed), entry.ErrMalformed},
		{"typ other than JWT", mint(`{"alg":"EdDSA","typ":"at+jwt","kid":"k1"}`, payload, ed), entry.ErrMalformed},
		{"b64 false", mint(`{"alg":"EdDSA","typ":"JWT","kid":"k1","b64":false,"crit":["b64"]}`, payload, ed), entry.ErrMalformed},
		{"JSON serialization", `{"payload":"` + b64(payload) + `","protected":"` + b64(`{"alg":"EdDSA","kid":"k1"}`) + `","signature":"AA"}`, entry.ErrMalformed},
		{"signed by another key, kid k1", mint(`{"alg":"EdDSA","typ":"JWT","kid":"k1"}`, payload, func(b []byte) []byte {
			return ed25519.Sign(ed25519.NewKeyFromSeed(seed(3)), b)
		}), entry.ErrSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for name, v := range map[string]*entry.Verifier{"keyring": k.Verifier, "jwks": remote} {
				if got, err := v.Verify(tc.token, "e1", now); !errors.Is(err, tc.want) {
					t.Errorf("%s: Verify = %+v, %v; want %v", name, got, err, tc.want)
				}
			}
		})
	}
	// The same payload under the honest header verifies: each refusal
	// above is the header's doing.
	if _, err := k.Verify(mint(`{"alg":"EdDSA","typ":"JWT","kid":"k1"}`, payload, ed), "e1", now); err != nil {
		t.Fatalf("the honest token: %v", err)
	}
}

func TestClaimsChecked(t *testing.T) {
	k, _ := entry.NewKeyring("k1", seed(1), nil)
	k = k.WithIssuer("https://queue.example.com")
	tok := k.Sign(entry.Token{EventID: "e1", UserID: "u1", Expires: now.Add(time.Minute).UnixMilli(), IssuedAt: now.UnixMilli()})
	remote, _ := entry.ParseJWKS(k.JWKS())
	if _, err := remote.Verify(tok, "e1", now); err != nil {
		t.Fatalf("no issuer configured: %v", err)
	}
	remote.Issuer = "https://queue.example.com"
	if _, err := remote.Verify(tok, "e1", now); err != nil {
		t.Fatalf("the right issuer: %v", err)
	}
	remote.Issuer = "https://other.example.com"
	if _, err := remote.Verify(tok, "e1", now); !errors.Is(err, entry.ErrOtherIssuer) || entry.Reason(err) != "other_issuer" {
		t.Fatalf("another issuer: %v", err)
	}
	if _, err := k.Verify(tok, "e1", now.Add(-3*time.Second)); !errors.Is(err, entry.ErrNotYetValid) || entry.Reason(err) != "not_yet_valid" {
		t.Fatalf("before nbf beyond the skew: %v", err)
	}
	if _, err := k.Verify(tok, "e1", now.Add(-time.Second)); err != nil {
		t.Fatalf("before nbf within the skew: %v", err)
	}
	if _, err := k.Verify(tok, "", now); err != nil {
		t.Fatalf("any event: %v", err)
	}
}

// TestLegacyTokensDuringTheUpgrade: e2 tokens of the previous release
// verify with the same keys, marked Legacy, and fail as they always did.
func TestLegacyTokensDuringTheUpgrade(t *testing.T) {
	k, _ := entry.NewKeyring("k1", seed(1), nil)
	k = k.WithIssuer("https://queue.example.com") // e2 tokens carry no issuer: not checked for them
	claims := entry.Token{EventID: "e1", UserID: "u1", Expires: now.Add(time.Minute).UnixMilli(), IssuedAt: now.UnixMilli()}
	old := entry.SignLegacy("k1", seed(1), claims)
	got, err := k.Verify(old, "e1", now)
	if err != nil || !got.Legacy || got.UserID != "u1" || got.Expires != claims.Expires || got.KeyID != "k1" || got.ID != entry.AdmissionID("e1", "u1", claims.Expires) {
		t.Fatalf("Verify(e2) = %+v, %v", got, err)
	}
	if fresh, _ := k.Verify(k.Sign(claims), "e1", now); fresh.Legacy || fresh.ID != got.ID {
		t.Errorf("a JWT of the same admission: %+v", fresh)
	}
	for name, tc := range map[string]struct {
		token string
		at    time.Time
		event string
		want  error
	}{
		"expired":       {old, now.Add(time.Minute + 2*time.Second), "e1", entry.ErrExpired},
		"other event":   {old, now, "e2", entry.ErrOtherEvent},
		"unknown key":   {entry.SignLegacy("k9", seed(1), claims), now, "e1", entry.ErrUnknownKey},
		"other key":     {entry.SignLegacy("k1", seed(2), claims), now, "e1", entry.ErrSignature},
		"claims forged": {old[:strings.LastIndexByte(old, '.')] + "x" + old[strings.LastIndexByte(old, '.'):], now, "e1", entry.ErrSignature},
	} {
		if _, err := k.Verify(tc.token, tc.event, tc.at); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

func TestJWKSIsRFC8037(t *testing.T) {
	k, _ := entry.NewKeyring("k1", seed(1), map[string]ed25519.PublicKey{"k0": ed25519.NewKeyFromSeed(seed(2)).Public().(ed25519.PublicKey)})
	var set struct{ Keys []map[string]string }
	if err := json.Unmarshal(k.JWKS(), &set); err != nil || len(set.Keys) != 2 {
		t.Fatalf("JWKS %s: %v", k.JWKS(), err)
	}
	for i, kid := range []string{"k0", "k1"} {
		key := set.Keys[i]
		if key["kid"] != kid || key["kty"] != "OKP" || key["crv"] != "Ed25519" || key["alg"] != "EdDSA" || key["use"] != "sig" || len(key["x"]) != 43 || key["d"] != "" {
			t.Errorf("key %d: %v", i, key)
		}
	}
	// Keys of other types are left out; an RSA key among them is no error.
	mixed := `{"keys":[{"kty":"oct","k":"AAAA","kid":"h"},{"kty":"OKP","crv":"X25519","kid":"x","x":"` + strings.Repeat("A", 43) + `"},` + strings.TrimPrefix(string(k.JWKS()), `{"keys":[`)
	v, err := entry.ParseJWKS([]byte(mixed))
	if err != nil {
		t.Fatalf("mixed set: %v", err)
	}
	if _, err := v.Verify(k.Sign(entry.Token{EventID: "e", UserID: "u", Expires: now.Add(time.Minute).UnixMilli()}), "e", now); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k","x":"` + strings.Repeat("A", 43) + `","alg":"HS256"}]}`,
		`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + strings.Repeat("A", 43) + `"}]}`,
	} {
		if _, err := entry.ParseJWKS([]byte(bad)); err == nil {
			t.Errorf("ParseJWKS(%s) accepted", bad)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

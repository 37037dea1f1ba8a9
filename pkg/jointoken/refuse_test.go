package jointoken_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/pkg/jointoken"
)

// TestVerifyRefuses: every refusal of Verify, most with tokens forged by
// hand where go-jose would not mint them. Each forged token differs from
// an honest one (checked last) by the one thing refused.
func TestVerifyRefuses(t *testing.T) {
	priv := edKey(1)
	pub := priv.Public().(ed25519.PublicKey)
	edK := mustKey(t)(jointoken.Ed25519Key("ed", pub))
	hsK := mustKey(t)(jointoken.HMACKey("hs", secret(0)))
	keys := []jointoken.Key{edK, hsK}
	exp := itoa(now.Add(10 * time.Minute).Unix())
	payload := `{"sub":"mallory","aud":"e1","exp":` + exp + `}`
	edH, hsH := `{"alg":"EdDSA","kid":"ed","typ":"JWT"}`, `{"alg":"HS256","kid":"hs","typ":"JWT"}`
	jwkX := base64.RawURLEncoding.EncodeToString(pub)
	honest := forge(edH, payload, ed(priv))
	sigOf := func(tok string) string { return tok[strings.LastIndexByte(tok, '.')+1:] }
	tests := []struct {
		name, token, event string
		at                 time.Time
		want               error
	}{
		{"alg none", forge(`{"alg":"none","kid":"ed","typ":"JWT"}`, payload, func([]byte) []byte { return []byte{0} }), "e1", now, jointoken.ErrAlgorithm},
		{"alg none, empty signature", b64(`{"alg":"none","kid":"ed"}`) + "." + b64(payload) + ".", "e1", now, jointoken.ErrMalformed},
		{"alg none, two parts", b64(`{"alg":"none"}`) + "." + b64(payload), "e1", now, jointoken.ErrMalformed},
		{"no alg", forge(`{"kid":"ed"}`, payload, ed(priv)), "e1", now, jointoken.ErrAlgorithm},
		{"RS256", forge(`{"alg":"RS256","kid":"ed"}`, payload, ed(priv)), "e1", now, jointoken.ErrAlgorithm},
		{"HS512", forge(`{"alg":"HS512","kid":"hs"}`, payload, hs(secret(0))), "e1", now, jointoken.ErrAlgorithm},
		{"Ed25519 as alg name", forge(`{"alg":"Ed25519","kid":"ed"}`, payload, ed(priv)), "e1", now, jointoken.ErrAlgorithm},
		{"HS256 keyed with the Ed25519 public key", forge(`{"alg":"HS256","kid":"ed"}`, payload, hs(pub)), "e1", now, jointoken.ErrAlgorithm},
		{"HS256 keyed with the JWK's x", forge(`{"alg":"HS256","kid":"ed"}`, payload, hs([]byte(jwkX))), "e1", now, jointoken.ErrAlgorithm},
		{"EdDSA under an HS256 kid", forge(`{"alg":"EdDSA","kid":"hs"}`, payload, ed(priv)), "e1", now, jointoken.ErrAlgorithm},
		{"no kid", forge(`{"alg":"EdDSA"}`, payload, ed(priv)), "e1", now, jointoken.ErrUnknownKey},
		{"kid not registered", forge(`{"alg":"EdDSA","kid":"ed2"}`, payload, ed(priv)), "e1", now, jointoken.ErrUnknownKey},
		{"kid not a key id", forge(`{"alg":"EdDSA","kid":"../ed"}`, payload, ed(priv)), "e1", now, jointoken.ErrUnknownKey},
		{"jku header", forge(`{"alg":"EdDSA","kid":"ed","jku":"https://evil.example/jwks.json"}`, payload, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"x5u header", forge(`{"alg":"EdDSA","kid":"ed","x5u":"https://evil.example/c.pem"}`, payload, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"jwk header", forge(`{"alg":"EdDSA","kid":"ed","jwk":{"kty":"OKP","crv":"Ed25519","x":"`+jwkX+`"}}`, payload, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"x5c header", forge(`{"alg":"EdDSA","kid":"ed","x5c":["MIIB"]}`, payload, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"crit header", forge(`{"alg":"EdDSA","kid":"ed","crit":["exp"],"exp":1}`, payload, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"b64 false", forge(`{"alg":"EdDSA","kid":"ed","b64":false,"crit":["b64"]}`, payload, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"typ other than JWT", forge(`{"alg":"EdDSA","kid":"ed","typ":"at+jwt"}`, payload, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"alg given twice", forge(`{"alg":"HS256","alg":"EdDSA","kid":"ed"}`, payload, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"kid a number", forge(`{"alg":"EdDSA","kid":1}`, payload, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"header not an object", forge(`["alg"]`, payload, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"header with trailing data", forge(edH+`{}`, payload, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"JSON serialization", `{"payload":"` + b64(payload) + `","protected":"` + b64(edH) + `","signature":"AA"}`, "e1", now, jointoken.ErrMalformed},
		{"padded base64", honest + "==", "e1", now, jointoken.ErrMalformed},
		{"signature with non-zero unused bits", honest[:len(honest)-1] + string(sigOf(honest)[len(sigOf(honest))-1]+1), "e1", now, jointoken.ErrMalformed},
		{"longer than 4 KiB", forge(edH, `{"sub":"mallory","aud":"e1","exp":`+exp+`,"pad":"`+strings.Repeat("x", 4096)+`"}`, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"signed by another Ed25519 key", forge(edH, payload, ed(edKey(9))), "e1", now, jointoken.ErrSignature},
		{"HS256 signed with another secret", forge(hsH, payload, hs(secret(1))), "e1", now, jointoken.ErrSignature},
		{"claims changed after signing", b64(edH) + "." + b64(strings.Replace(payload, "mallory", "alice", 1)) + "." + sigOf(honest), "e1", now, jointoken.ErrSignature},
		{"no sub", forge(edH, `{"aud":"e1","exp":`+exp+`}`, ed(priv)), "e1", now, jointoken.ErrMissingClaim},
		{"no aud", forge(edH, `{"sub":"mallory","exp":`+exp+`}`, ed(priv)), "e1", now, jointoken.ErrMissingClaim},
		{"no exp", forge(edH, `{"sub":"mallory","aud":"e1"}`, ed(priv)), "e1", now, jointoken.ErrMissingClaim},
		{"exp not a number", forge(edH, `{"sub":"mallory","aud":"e1","exp":"soon"}`, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"claims not JSON", forge(edH, `sub=mallory`, ed(priv)), "e1", now, jointoken.ErrMalformed},
		{"another event", honest, "e2", now, jointoken.ErrOtherEvent},
		{"no event to check", honest, "", now, jointoken.ErrOtherEvent},
		{"expired beyond the leeway", honest, "e1", now.Add(10*time.Minute + jointoken.Leeway + time.Second), jointoken.ErrExpired},
		{"nbf ahead beyond the leeway", forge(edH, `{"sub":"mallory","aud":"e1","exp":`+exp+`,"nbf":`+itoa(now.Add(31*time.Second).Unix())+`}`, ed(priv)), "e1", now, jointoken.ErrNotYetValid},
		{"iat ahead beyond the leeway", forge(edH, `{"sub":"mallory","aud":"e1","exp":`+exp+`,"iat":`+itoa(now.Add(time.Minute).Unix())+`}`, ed(priv)), "e1", now, jointoken.ErrNotYetValid},
		{"exp more than 30 days ahead", forge(edH, `{"sub":"mallory","aud":"e1","exp":`+itoa(now.Add(jointoken.MaxLifetime+time.Hour).Unix())+`}`, ed(priv)), "e1", now, jointoken.ErrLifetime},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := jointoken.Verify(tc.token, keys, tc.event, tc.at)
			if !errors.Is(err, tc.want) || !errors.Is(err, jointoken.ErrInvalid) || got != (jointoken.Claims{}) {
				t.Fatalf("Verify = %+v, %v; want %v", got, err, tc.want)
			}
			t.Log(err)
		})
	}
	// The honest token verifies, also at the edges of the leeway: each
	// refusal above is the forger's doing.
	for name, tc := range map[string]struct {
		token string
		at    time.Time
	}{
		"honest":                      {honest, now},
		"honest, HS256":               {forge(hsH, payload, hs(secret(0))), now},
		"expired within the leeway":   {honest, now.Add(10*time.Minute + jointoken.Leeway - time.Second)},
		"nbf ahead within the leeway": {forge(edH, `{"sub":"mallory","aud":"e1","exp":`+exp+`,"nbf":`+itoa(now.Add(29*time.Second).Unix())+`}`, ed(priv)), now},
		"exp 30 days ahead":           {forge(edH, `{"sub":"mallory","aud":"e1","exp":`+itoa(now.Add(jointoken.MaxLifetime).Unix())+`}`, ed(priv)), now},
	} {
		if _, err := jointoken.Verify(tc.token, keys, "e1", tc.at); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestKidRegisteredTwice: an ambiguous key set verifies nothing under the
// doubled kid.
func TestKidRegisteredTwice(t *testing.T) {
	k := mustKey(t)(jointoken.HMACKey("k", secret(0)))
	tok := mustMint(t, k, claims())
	if _, err := jointoken.Verify(tok, []jointoken.Key{k, k}, "e1", now); !errors.Is(err, jointoken.ErrUnknownKey) {
		t.Fatalf("kid registered twice: %v", err)
	}
	bad := jointoken.Key{ID: "k", Alg: "HS256", Secret: []byte("short")}
	if _, err := jointoken.Verify(tok, []jointoken.Key{bad}, "e1", now); !errors.Is(err, jointoken.ErrUnknownKey) {
		t.Fatalf("an invalid key registered: %v", err)
	}
}

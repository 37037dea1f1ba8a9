package entry_test

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/pkg/entry"
)

var now = time.UnixMilli(1_700_000_000_000)

func seed(b byte) []byte { return []byte(strings.Repeat(string(rune('a'+b)), 32)) }

func TestVerifyFailuresAreDistinct(t *testing.T) {
	k, err := entry.NewKeyring("k1", seed(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	claims := entry.Token{EventID: "e1", UserID: "u1", Expires: now.Add(time.Minute).UnixMilli(), IssuedAt: now.UnixMilli()}
	tok := k.Sign(claims)
	got, err := k.Verify(tok, "e1", now)
	claims.KeyID, claims.Issuer, claims.ID = "k1", entry.DefaultIssuer, entry.AdmissionID("e1", "u1", claims.Expires)
	if err != nil || got != claims {
		t.Fatalf("Verify = %+v, %v", got, err)
	}
	other, _ := entry.NewKeyring("k2", seed(2), nil)
	impostor, _ := entry.NewKeyring("k1", seed(3), nil) // same key id, other key
	body := tok[:strings.LastIndexByte(tok, '.')]
	forgedClaims := strings.Replace(tok, strings.Split(tok, ".")[1], b64(`{"iss":"waitq","sub":"mallory","aud":"e1","iat":0,"nbf":0,"exp":9999999999,"jti":"x","exp_ms":9999999999999}`), 1)
	tests := []struct {
		name, token, event string
		at                 time.Time
		want               error
	}{
		{"unknown key id", other.Sign(claims), "e1", now, entry.ErrUnknownKey},
		{"same key id, other key", impostor.Sign(claims), "e1", now, entry.ErrSignature},
		{"claims swapped under the signature", forgedClaims, "e1", now, entry.ErrSignature},
		{"truncated signature", body + ".AAAA", "e1", now, entry.ErrMalformed},
		{"expired beyond the skew", tok, "e1", now.Add(time.Minute + 3*time.Second), entry.ErrExpired},
		{"other event", tok, "e2", now, entry.ErrOtherEvent},
		{"garbage", "e2.k1.x.y.z", "e1", now, entry.ErrMalformed},
		{"garbage JWT", "eyJ.x.y", "e1", now, entry.ErrMalformed},
		{"two parts", body, "e1", now, entry.ErrMalformed},
		{"old format", "e1.abc.def", "e1", now, entry.ErrMalformed},
		{"empty", "", "e1", now, entry.ErrMalformed},
	}
	for _, tc := range tests {
		if _, err := k.Verify(tc.token, tc.event, tc.at); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Within the skew a token just past its expiry still passes.
	if _, err := k.Verify(tok, "e1", now.Add(time.Minute+time.Second)); err != nil {
		t.Errorf("within the skew: %v", err)
	}
}

func TestRotationKeepsOldTokensValid(t *testing.T) {
	before, _ := entry.NewKeyring("2026-01", seed(1), nil)
	old := before.Sign(entry.Token{EventID: "e", UserID: "u", Expires: now.Add(time.Minute).UnixMilli()})
	pub := map[string]ed25519.PublicKey{"2026-01": ed25519.NewKeyFromSeed(seed(1)).Public().(ed25519.PublicKey)}
	after, err := entry.NewKeyring("2026-02", seed(2), pub)
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := after.Verify(old, "e", now); err != nil || tok.KeyID != "2026-01" {
		t.Fatalf("a token of the previous key during the overlap: %+v %v", tok, err)
	}
	fresh := after.Sign(entry.Token{EventID: "e", UserID: "u", Expires: now.Add(time.Minute).UnixMilli()})
	if h := header(t, fresh); h["kid"] != "2026-02" || h["alg"] != "EdDSA" || h["typ"] != "JWT" || len(h) != 3 {
		t.Fatalf("new tokens are not signed with the new key: %s", fresh)
	}
	// The protected service learns both keys from the JWKS.
	remote, err := entry.ParseJWKS(after.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{old, fresh} {
		if _, err := remote.Verify(tok, "e", now); err != nil {
			t.Errorf("verify through the JWKS: %v", err)
		}
	}
	// After the overlap the old key is dropped and its tokens refused.
	later, _ := entry.NewKeyring("2026-02", seed(2), nil)
	if _, err := later.Verify(old, "e", now); !errors.Is(err, entry.ErrUnknownKey) {
		t.Errorf("old token after the overlap: %v", err)
	}
}

func TestDerivedKeyringIsStable(t *testing.T) {
	a, _ := entry.DerivedKeyring("a-shared-secret", nil)
	b, _ := entry.DerivedKeyring("a-shared-secret", nil)
	c, _ := entry.DerivedKeyring("another-secret", nil)
	tok := a.Sign(entry.Token{EventID: "e", UserID: "u", Expires: now.Add(time.Minute).UnixMilli()})
	if _, err := b.Verify(tok, "e", now); err != nil || a.KeyID() != b.KeyID() {
		t.Fatalf("two gateways with one secret disagree: %v", err)
	}
	if _, err := c.Verify(tok, "e", now); err == nil || a.KeyID() == c.KeyID() {
		t.Fatal("another secret accepted the token")
	}
}

func TestParseKeyAndBadJWKS(t *testing.T) {
	if kid, key, err := entry.ParseKey("k1:" + strings.Repeat("A", 43)); err != nil || kid != "k1" || len(key) != 32 {
		t.Fatalf("ParseKey: %q %d %v", kid, len(key), err)
	}
	for _, bad := range []string{"", "k1", ":AAAA", "k1:short", "k1:" + strings.Repeat("!", 43)} {
		if _, _, err := entry.ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
	for _, bad := range []string{`[]`, `{"keys":[]}`, `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k","x":"short"}]}`} {
		if _, err := entry.ParseJWKS([]byte(bad)); err == nil {
			t.Errorf("ParseJWKS(%s) accepted", bad)
		}
	}
}

// FuzzVerify: nothing the signer did not make is accepted.
func FuzzVerify(f *testing.F) {
	k, _ := entry.NewKeyring("k1", seed(1), nil)
	claims := entry.Token{EventID: "e1", UserID: "u1", Expires: now.Add(time.Minute).UnixMilli(), IssuedAt: now.UnixMilli()}
	good := k.Sign(claims)
	legacy := entry.SignLegacy("k1", seed(1), claims)
	parts := strings.Split(good, ".")
	for _, s := range []string{good, good[:len(good)-2], legacy, legacy[:len(legacy)-2], "e2.k1..", "e2.k1.e30.AAAA", "",
		parts[0] + "." + parts[1] + ".", b64(`{"alg":"none"}`) + "." + parts[1] + ".", parts[0] + ".e30." + parts[2]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		got, err := k.Verify(token, "", now)
		if err != nil {
			return
		}
		remint := k.Sign(entry.Token{EventID: got.EventID, UserID: got.UserID, Expires: got.Expires, IssuedAt: got.IssuedAt, ID: got.ID})
		if got.Legacy {
			remint = entry.SignLegacy("k1", seed(1), got)
		}
		if remint != token {
			t.Fatalf("accepted a token the keyring did not make: %q", token)
		}
	})
}

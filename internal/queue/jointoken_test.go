package queue_test

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/b64"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/jointoken"
)

var (
	jtNow    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	jtSecret = []byte("0123456789abcdef0123456789abcdef")
	jtPriv   = ed25519.NewKeyFromSeed(make([]byte, 32))
)

func hsPolicyKey(kid string) queue.JoinTokenKey {
	return queue.JoinTokenKey{Kid: kid, Alg: "HS256", Secret: b64.Encode(jtSecret)}
}

func edPolicyKey(kid string) queue.JoinTokenKey {
	return queue.JoinTokenKey{Kid: kid, Alg: "EdDSA", PublicKey: b64.Encode(jtPriv.Public().(ed25519.PublicKey))}
}

func TestJoinTokenPolicyValidate(t *testing.T) {
	many := make([]queue.JoinTokenKey, queue.MaxJoinTokenKeys+1)
	for i := range many {
		many[i] = hsPolicyKey("k" + string(rune('a'+i)))
	}
	tests := []struct {
		name   string
		policy queue.JoinTokenPolicy
		want   string // in the message; "" valid
	}{
		{"none", queue.JoinTokenPolicy{}, ""},
		{"HS256 and EdDSA", queue.JoinTokenPolicy{Required: true, Keys: []queue.JoinTokenKey{hsPolicyKey("a"), edPolicyKey("b")}}, ""},
		{"padded base64url", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{{Kid: "a", Alg: "HS256", Secret: b64.Encode(jtSecret) + "="}}}, ""},
		{"eight keys", queue.JoinTokenPolicy{Keys: many[:8]}, ""},
		{"nine keys", queue.JoinTokenPolicy{Keys: many}, "at most 8 keys"},
		{"required without keys", queue.JoinTokenPolicy{Required: true}, "joinToken.required needs at least one key"},
		{"kid twice", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{hsPolicyKey("a"), edPolicyKey("a")}}, `joinToken.keys[1].kid "a" is given twice`},
		{"kid empty", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{hsPolicyKey("")}}, "joinToken.keys[0].kid must be 1-64"},
		{"kid with a space", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{hsPolicyKey("a b")}}, "joinToken.keys[0].kid must be 1-64"},
		{"unknown alg", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{{Kid: "a", Alg: "RS256", Secret: b64.Encode(jtSecret)}}}, `joinToken.keys[0].alg must be "HS256" or "EdDSA"`},
		{"bad base64 secret", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{{Kid: "a", Alg: "HS256", Secret: "a+b/" + strings.Repeat("A", 40)}}}, "joinToken.keys[0].secret must be base64url"},
		{"bad base64 public key", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{{Kid: "a", Alg: "EdDSA", PublicKey: "!!"}}}, "joinToken.keys[0].publicKey must be base64url"},
		{"short secret", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{{Kid: "a", Alg: "HS256", Secret: b64.Encode(jtSecret[:31])}}}, "at least 32 bytes (43 base64url characters), not 31"},
		{"public key of 31 bytes", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{{Kid: "a", Alg: "EdDSA", PublicKey: b64.Encode(make([]byte, 31))}}}, "raw Ed25519 public key of 32 bytes (43 base64url characters), not 31"},
		{"private key given as public", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{{Kid: "a", Alg: "EdDSA", PublicKey: b64.Encode(jtPriv)}}}, "not 64"},
		{"HS256 with both", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{{Kid: "a", Alg: "HS256", Secret: b64.Encode(jtSecret), PublicKey: edPolicyKey("a").PublicKey}}}, "(HS256) needs a secret and no publicKey"},
		{"HS256 with neither", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{{Kid: "a", Alg: "HS256"}}}, "(HS256) needs a secret and no publicKey"},
		{"EdDSA with both", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{{Kid: "a", Alg: "EdDSA", Secret: b64.Encode(jtSecret), PublicKey: edPolicyKey("a").PublicKey}}}, "(EdDSA) needs a publicKey and no secret"},
		{"EdDSA with a secret only", queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{{Kid: "a", Alg: "EdDSA", Secret: b64.Encode(jtSecret)}}}, "(EdDSA) needs a publicKey and no secret"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.Validate()
			switch {
			case tc.want == "" && err == nil:
				return
			case tc.want == "":
				t.Fatalf("Validate = %v, want valid", err)
			case queue.ErrorCode(err) != queue.CodeInvalidConfig || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("Validate = %v, want invalid_config with %q", err, tc.want)
			}
			for _, k := range tc.policy.Keys {
				if k.Secret != "" && strings.Contains(err.Error(), k.Secret) {
					t.Fatalf("the message shows the secret: %v", err)
				}
			}
		})
	}
}

// TestJoinTokenPolicyJSON: the policy reads and writes the field names of
// the admin API.
func TestJoinTokenPolicyJSON(t *testing.T) {
	in := `{"required":true,"keys":[{"kid":"a","alg":"HS256","secret":"` + b64.Encode(jtSecret) + `"},{"kid":"b","alg":"EdDSA","publicKey":"` + edPolicyKey("b").PublicKey + `"}]}`
	var p queue.JoinTokenPolicy
	if err := json.Unmarshal([]byte(in), &p); err != nil || p.Validate() != nil || !p.Required || len(p.Keys) != 2 {
		t.Fatalf("%+v %v", p, err)
	}
	if out, _ := json.Marshal(p); string(out) != in {
		t.Fatalf("Marshal = %s\nwant      %s", out, in)
	}
}

func TestJoinTokenPolicyVerify(t *testing.T) {
	policy := &queue.JoinTokenPolicy{Required: true, Keys: []queue.JoinTokenKey{hsPolicyKey("hs"), edPolicyKey("ed")}}
	hsK, _ := jointoken.HMACKey("hs", jtSecret)
	edK, _ := jointoken.Ed25519SigningKey("ed", jtPriv)
	mint := func(k jointoken.Key, sub, jti string) string {
		tok, err := jointoken.Mint(k, jointoken.Claims{Subject: sub, EventID: "e1", Expiry: jtNow.Add(time.Minute), ID: jti})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, k := range []jointoken.Key{hsK, edK} {
		c, err := policy.Verify(mint(k, "acct:4711@shop", "j-1"), "e1", jtNow)
		if err != nil || c.Subject != "acct:4711@shop" || c.ID != "j-1" || !c.Expiry.Equal(jtNow.Add(time.Minute)) || c.KeyID != k.ID {
			t.Fatalf("%s: %+v, %v", k.Alg, c, err)
		}
	}
	if c, err := policy.Verify(mint(hsK, "alice", ""), "e1", jtNow); err != nil || c.ID != "" {
		t.Fatalf("without a jti: %+v, %v", c, err)
	}
	otherSecret, _ := jointoken.HMACKey("hs", []byte(strings.Repeat("z", 32)))
	tests := []struct {
		name   string
		policy *queue.JoinTokenPolicy
		token  string
		event  string
		code   queue.Code
		want   string
	}{
		{"no token", policy, "", "e1", queue.CodeJoinTokenRequired, "join token only"},
		{"no policy", nil, mint(hsK, "alice", ""), "e1", queue.CodeInvalidJoinToken, "takes no join tokens"},
		{"no keys", &queue.JoinTokenPolicy{}, mint(hsK, "alice", ""), "e1", queue.CodeInvalidJoinToken, "takes no join tokens"},
		{"a stored key broken", &queue.JoinTokenPolicy{Keys: []queue.JoinTokenKey{{Kid: "hs", Alg: "HS256", Secret: "c2hvcnQ"}}}, mint(hsK, "alice", ""), "e1", queue.CodeInvalidJoinToken, "keys are not valid"},
		{"another event", policy, mint(hsK, "alice", ""), "e2", queue.CodeInvalidJoinToken, "join token refused: for another event"},
		{"expired", policy, mint(hsK, "alice", ""), "e1", queue.CodeInvalidJoinToken, "join token refused: expired"},
		{"another secret", policy, mint(otherSecret, "alice", ""), "e1", queue.CodeInvalidJoinToken, "join token refused: signature does not match"},
		{"garbage", policy, "not.a.token", "e1", queue.CodeInvalidJoinToken, "join token refused: malformed"},
		{"sub not a user id", policy, mint(hsK, "alice smith", ""), "e1", queue.CodeInvalidJoinToken, "sub must be a user id"},
		{"sub too long", policy, mint(hsK, strings.Repeat("a", 129), ""), "e1", queue.CodeInvalidJoinToken, "sub must be a user id"},
		{"jti with a slash", policy, mint(hsK, "alice", "a/b"), "e1", queue.CodeInvalidJoinToken, "jti must be 1-128"},
		{"jti too long", policy, mint(hsK, "alice", strings.Repeat("j", 129)), "e1", queue.CodeInvalidJoinToken, "jti must be 1-128"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			at := jtNow
			if tc.name == "expired" {
				at = jtNow.Add(time.Hour)
			}
			_, err := tc.policy.Verify(tc.token, tc.event, at)
			if queue.ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify = %v, want %s with %q", err, tc.code, tc.want)
			}
			if strings.Contains(err.Error(), "jointoken:") {
				t.Errorf("the message names the Go package: %v", err)
			}
		})
	}
}

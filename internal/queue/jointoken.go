package queue

import (
	"crypto/ed25519"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/b64"
	"github.com/waitq/waitq/pkg/jointoken"
)

// Limits of an event's join token policy.
const (
	// MaxJoinTokenKeys is the most keys one event registers: enough for a
	// rotation's overlap of both algorithms.
	MaxJoinTokenKeys = 8
	// MaxJoinTokenIDLen is the longest one-time id (jti) of a join token.
	MaxJoinTokenIDLen = 128
)

// JoinTokenPolicy is an event's join tokens: the keys of the shop that
// vouches for its customers (package jointoken), and whether a join needs
// a token ("invite only").
type JoinTokenPolicy struct {
	// Required refuses joins without a join token (join_token_required).
	Required bool `json:"required"`
	// Keys are the keys tokens may be signed with, each under its own
	// kid; several at once let the shop rotate without downtime.
	Keys []JoinTokenKey `json:"keys"`
}

// JoinTokenKey is one key of a JoinTokenPolicy, as the admin API writes
// it: a kid, an algorithm, and the key material in unpadded base64url.
type JoinTokenKey struct {
	// Kid is the key id tokens name in their header: 1–64 characters of
	// [A-Za-z0-9._-].
	Kid string `json:"kid"`
	// Alg is "HS256" (a shared secret) or "EdDSA" (an Ed25519 public
	// key).
	Alg string `json:"alg"`
	// Secret is the HS256 secret, base64url, at least 32 bytes.
	Secret string `json:"secret,omitempty"`
	// PublicKey is the EdDSA key, base64url of the raw 32 bytes.
	PublicKey string `json:"publicKey,omitempty"`
}

// Validate reports the first key of p that cannot work, or a policy that
// requires tokens no key can sign, as an invalid_config error naming the
// field.
func (p *JoinTokenPolicy) Validate() error {
	if len(p.Keys) > MaxJoinTokenKeys {
		return Errorf(CodeInvalidConfig, "joinToken.keys holds at most %d keys, not %d", MaxJoinTokenKeys, len(p.Keys))
	}
	if p.Required && len(p.Keys) == 0 {
		return Errorf(CodeInvalidConfig, "joinToken.required needs at least one key in joinToken.keys")
	}
	seen := map[string]bool{}
	for i, k := range p.Keys {
		if _, err := k.key(i); err != nil {
			return err
		}
		if seen[k.Kid] {
			return Errorf(CodeInvalidConfig, "joinToken.keys[%d].kid %q is given twice: each key needs its own kid", i, k.Kid)
		}
		seen[k.Kid] = true
	}
	return nil
}

// key converts k, the i-th key of a policy, or returns why it cannot.
func (k JoinTokenKey) key(i int) (jointoken.Key, error) {
	if !jointoken.ValidKeyID(k.Kid) {
		return jointoken.Key{}, Errorf(CodeInvalidConfig, "joinToken.keys[%d].kid must be 1-%d characters of [A-Za-z0-9._-]", i, jointoken.MaxKeyIDLen)
	}
	var key jointoken.Key
	switch k.Alg {
	case jointoken.HS256:
		if k.Secret == "" || k.PublicKey != "" {
			return jointoken.Key{}, Errorf(CodeInvalidConfig, "joinToken.keys[%d] (HS256) needs a secret and no publicKey", i)
		}
		secret, err := decodeKey(k.Secret)
		if err != nil {
			return jointoken.Key{}, Errorf(CodeInvalidConfig, "joinToken.keys[%d].secret must be base64url", i)
		}
		if len(secret) < jointoken.MinSecretLen {
			return jointoken.Key{}, Errorf(CodeInvalidConfig, "joinToken.keys[%d].secret must be at least %d bytes (43 base64url characters), not %d", i, jointoken.MinSecretLen, len(secret))
		}
		key = jointoken.Key{ID: k.Kid, Alg: k.Alg, Secret: secret}
	case jointoken.EdDSA:
		if k.PublicKey == "" || k.Secret != "" {
			return jointoken.Key{}, Errorf(CodeInvalidConfig, "joinToken.keys[%d] (EdDSA) needs a publicKey and no secret", i)
		}
		pub, err := decodeKey(k.PublicKey)
		if err != nil {
			return jointoken.Key{}, Errorf(CodeInvalidConfig, "joinToken.keys[%d].publicKey must be base64url", i)
		}
		if len(pub) != ed25519.PublicKeySize {
			return jointoken.Key{}, Errorf(CodeInvalidConfig, "joinToken.keys[%d].publicKey must be a raw Ed25519 public key of %d bytes (43 base64url characters), not %d", i, ed25519.PublicKeySize, len(pub))
		}
		key = jointoken.Key{ID: k.Kid, Alg: k.Alg, PublicKey: pub}
	default:
		return jointoken.Key{}, Errorf(CodeInvalidConfig, "joinToken.keys[%d].alg must be %q or %q", i, jointoken.HS256, jointoken.EdDSA)
	}
	if err := key.Validate(); err != nil { // the checks above are jointoken's; this keeps them in step
		return jointoken.Key{}, Errorf(CodeInvalidConfig, "joinToken.keys[%d]: %v", i, err)
	}
	return key, nil
}

// decodeKey reads base64url key material, padded or not.
func decodeKey(s string) ([]byte, error) { return b64.Decode(strings.TrimRight(s, "=")) }

// Verify returns the claims of token if it is a join token for eventID
// valid at now under one of p's keys, whose sub is a valid user id and
// whose jti, if any, is 1–128 characters of the user id alphabet. An empty
// token is join_token_required; every other failure is an
// invalid_join_token error saying why. Remembering used jtis is the
// caller's.
func (p *JoinTokenPolicy) Verify(token, eventID string, now time.Time) (jointoken.Claims, error) {
	if token == "" {
		return jointoken.Claims{}, Errorf(CodeJoinTokenRequired, "event %s takes joins with a join token only (X-Waitq-Join-Token)", eventID)
	}
	if p == nil || len(p.Keys) == 0 {
		return jointoken.Claims{}, Errorf(CodeInvalidJoinToken, "event %s takes no join tokens", eventID)
	}
	keys := make([]jointoken.Key, 0, len(p.Keys))
	for i, k := range p.Keys {
		key, err := k.key(i)
		if err != nil { // Validate refused it when the policy was stored
			return jointoken.Claims{}, Errorf(CodeInvalidJoinToken, "event %s's join token keys are not valid: %s", eventID, err.(*Error).Message)
		}
		keys = append(keys, key)
	}
	c, err := jointoken.Verify(token, keys, eventID, now)
	switch {
	case err != nil:
		return jointoken.Claims{}, Errorf(CodeInvalidJoinToken, "join token refused: %s", strings.TrimPrefix(err.Error(), jointoken.ErrInvalid.Error()+": "))
	case !ValidUserID(c.Subject):
		return jointoken.Claims{}, Errorf(CodeInvalidJoinToken, "join token refused: sub must be a user id, 1-%d characters of [A-Za-z0-9._:@-]", MaxUserIDLen)
	case c.ID != "" && (len(c.ID) > MaxJoinTokenIDLen || !ValidUserID(c.ID)):
		return jointoken.Claims{}, Errorf(CodeInvalidJoinToken, "join token refused: jti must be 1-%d characters of [A-Za-z0-9._:@-]", MaxJoinTokenIDLen)
	}
	return c, nil
}

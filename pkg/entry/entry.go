// Package entry issues and verifies entry tokens: the proof, signed with
// Ed25519, that a user was admitted to an event until a moment. The protected
// service imports it to check a token offline, with the gateway's public keys
// (fetched once from its /.well-known/jwks.json), and no shared secret.
//
// A token is "e2.<key id>.<base64url JSON claims>.<base64url signature>",
// the signature covering everything before the last dot. The key id lets a
// gateway rotate keys: verifiers accept every key they were given, so tokens
// signed with the previous key stay valid through an overlap.
//
// A protected Go service can also put Guard in front of its handlers: it
// takes the token from the waitq_token parameter admitted users arrive with
// into a cookie, passes requests with a valid one and sends the others to
// the waiting room, verifying with a KeySource that keeps the gateway's keys
// current (guard.go; its decisions in decision.go, the cookie in cookie.go,
// refusals in room.go, the done path in done.go, the verified-token cache in
// cache.go; keysource.go); Release gives a slot back (release.go).
//
// Keyring, Verifier, KeySource and Guard are safe for concurrent use.
package entry

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/b64"
)

// Token is what an entry token says.
type Token struct {
	EventID  string `json:"e"`
	UserID   string `json:"u"`
	Expires  int64  `json:"x"`   // unix ms: the end of the hold
	IssuedAt int64  `json:"iat"` // unix ms
	KeyID    string `json:"-"`
}

// The ways a token fails verification, each distinct so the protected
// service can log why it refused.
var (
	ErrMalformed  = errors.New("entry: token is malformed")
	ErrUnknownKey = errors.New("entry: token is signed with an unknown key")
	ErrSignature  = errors.New("entry: token signature does not match")
	ErrExpired    = errors.New("entry: token has expired")
	ErrOtherEvent = errors.New("entry: token is for another event")
)

const (
	prefix = "e2."
	maxLen = 2048
)

// Verifier checks tokens against a set of public keys by key id.
type Verifier struct {
	keys map[string]ed25519.PublicKey
	// Skew is the clock difference tolerated between the gateway and the
	// verifier: a token is accepted until its expiry plus Skew.
	Skew time.Duration
}

// NewVerifier returns a Verifier of the given public keys (key id → key).
func NewVerifier(keys map[string]ed25519.PublicKey) *Verifier {
	v := &Verifier{keys: map[string]ed25519.PublicKey{}, Skew: 2 * time.Second}
	for id, k := range keys {
		v.keys[id] = k
	}
	return v
}

// Verify checks token's signature and expiry and, when eventID is not empty,
// that it was issued for that event; it returns the claims also on
// ErrExpired and ErrOtherEvent.
func (v *Verifier) Verify(token, eventID string, now time.Time) (Token, error) {
	if len(token) > maxLen || !strings.HasPrefix(token, prefix) {
		return Token{}, ErrMalformed
	}
	parts := strings.Split(token[len(prefix):], ".")
	if len(parts) != 3 {
		return Token{}, ErrMalformed
	}
	kid, payload, sigText := parts[0], parts[1], parts[2]
	key, ok := v.keys[kid]
	if !ok {
		return Token{}, ErrUnknownKey
	}
	sig, err := b64.Decode(sigText)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return Token{}, ErrMalformed
	}
	if !ed25519.Verify(key, []byte(token[:strings.LastIndexByte(token, '.')]), sig) {
		return Token{}, ErrSignature
	}
	raw, err := b64.Decode(payload)
	var t Token
	if err != nil || json.Unmarshal(raw, &t) != nil || t.EventID == "" || t.UserID == "" {
		return Token{}, ErrMalformed
	}
	t.KeyID = kid
	if now.UnixMilli() >= t.Expires+v.Skew.Milliseconds() {
		return t, ErrExpired
	}
	if eventID != "" && t.EventID != eventID {
		return t, ErrOtherEvent
	}
	return t, nil
}

// Keyring signs with one key and verifies with it and any older keys.
type Keyring struct {
	*Verifier
	kid  string
	priv ed25519.PrivateKey
}

// NewKeyring signs with seed (32 bytes) under key id kid and also accepts
// tokens of the old public keys.
func NewKeyring(kid string, seed []byte, old map[string]ed25519.PublicKey) (*Keyring, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("entry: signing key seed must be %d bytes, not %d", ed25519.SeedSize, len(seed))
	}
	if kid == "" || strings.ContainsAny(kid, ".") {
		return nil, fmt.Errorf("entry: key id %q must be non-empty and without dots", kid)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	keys := map[string]ed25519.PublicKey{kid: priv.Public().(ed25519.PublicKey)}
	for id, k := range old {
		if id != kid {
			keys[id] = k
		}
	}
	return &Keyring{Verifier: NewVerifier(keys), kid: kid, priv: priv}, nil
}

// DerivedKeyring derives the signing key from a shared secret, with a key id
// from the public key, so every gateway given the same secret signs alike
// without further configuration.
func DerivedKeyring(secret string, old map[string]ed25519.PublicKey) (*Keyring, error) {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("waitq entry ed25519 v1"))
	seed := m.Sum(nil)
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	return NewKeyring("k"+hex.EncodeToString(sum[:4]), seed, old)
}

// KeyID is the id of the signing key.
func (k *Keyring) KeyID() string { return k.kid }

// Sign returns the token for t, signed with the current key.
func (k *Keyring) Sign(t Token) string {
	claims, _ := json.Marshal(t) // a struct of strings and ints cannot fail
	body := prefix + k.kid + "." + b64.Encode(claims)
	return body + "." + b64.Encode(ed25519.Sign(k.priv, []byte(body)))
}

// jwk is one key of a JWK Set (RFC 8037 for Ed25519).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	Kid string `json:"kid"`
	X   string `json:"x"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// JWKS returns the verifier's public keys as a JWK Set.
func (v *Verifier) JWKS() []byte {
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: []jwk{}}
	for id, k := range v.keys {
		set.Keys = append(set.Keys, jwk{Kty: "OKP", Crv: "Ed25519", Kid: id, X: base64.RawURLEncoding.EncodeToString(k), Use: "sig", Alg: "EdDSA"})
	}
	b, _ := json.Marshal(set)
	return b
}

// ParseJWKS returns a Verifier of the Ed25519 keys of a JWK Set.
func ParseJWKS(b []byte) (*Verifier, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("entry: parse JWKS: %w", err)
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize || k.Kid == "" {
			return nil, fmt.Errorf("entry: JWKS key %q is not a valid Ed25519 key", k.Kid)
		}
		keys[k.Kid] = x
	}
	if len(keys) == 0 {
		return nil, errors.New("entry: JWKS holds no Ed25519 key")
	}
	return NewVerifier(keys), nil
}

// FetchJWKS gets a gateway's keys from url (…/.well-known/jwks.json).
func FetchJWKS(ctx context.Context, c *http.Client, url string) (*Verifier, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("entry: fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("entry: fetch JWKS: %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("entry: fetch JWKS: %w", err)
	}
	return ParseJWKS(b)
}

// ParseKey reads "kid:base64url" as a key id and its bytes (a 32-byte seed
// for a signing key, a 32-byte public key otherwise).
func ParseKey(s string) (kid string, key []byte, err error) {
	kid, enc, ok := strings.Cut(s, ":")
	if !ok || kid == "" {
		return "", nil, errors.New(`entry: key must be "<key id>:<base64url bytes>"`)
	}
	key, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(enc, "="))
	if err != nil || len(key) != 32 {
		return "", nil, errors.New("entry: key must be 32 bytes, base64url")
	}
	return kid, key, nil
}

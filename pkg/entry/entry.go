// Package entry issues and verifies entry tokens: the proof, signed with
// Ed25519, that a user was admitted to an event until a moment. The protected
// service imports it to check a token offline, with the gateway's public keys
// (fetched once from its /.well-known/jwks.json), and no shared secret.
//
// A token is a JWT (RFC 7519) in the JWS compact serialization, signed with
// EdDSA (RFC 8037): header {"alg":"EdDSA","kid":…,"typ":"JWT"}, claims iss
// (the gateway), sub (the user), aud (the event), iat, nbf, exp, jti (the
// admission) and exp_ms (the end of the stay in unix ms). Signing, parsing
// and the signature check are go-jose's (github.com/go-jose/go-jose/v4);
// only EdDSA is accepted, the key is only ever one of the gateway's JWK Set
// chosen by kid, and headers beyond alg, kid and typ are refused. The key id
// lets a gateway rotate keys: verifiers accept every key they were given, so
// tokens signed with the previous key stay valid through an overlap. Tokens
// of the format before, "e2.<kid>.<claims>.<signature>", still verify
// during the upgrade (legacy.go).
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
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Token is what an entry token says.
type Token struct {
	EventID  string // aud
	UserID   string // sub
	Expires  int64  // unix ms: the end of the stay (exp_ms; exp is it in seconds, rounded up)
	IssuedAt int64  // unix ms, whole seconds (iat)
	// ID is the admission's id (jti), the same on every gateway for one
	// admission (AdmissionID): the handle of a refusal list. Sign fills it
	// in when empty.
	ID string
	// Issuer is the gateway's public URL, or DefaultIssuer (iss). Sign
	// takes the keyring's.
	Issuer string
	// KeyID is the id of the key that signed it (the header's kid).
	KeyID string
	// Legacy reports a token of the format before JWTs (e2.…), accepted
	// during the upgrade only.
	Legacy bool
}

// The ways a token fails verification, each distinct so the protected
// service can log why it refused.
var (
	ErrMalformed   = errors.New("entry: token is malformed")
	ErrUnknownKey  = errors.New("entry: token is signed with an unknown key")
	ErrSignature   = errors.New("entry: token signature does not match")
	ErrExpired     = errors.New("entry: token has expired")
	ErrOtherEvent  = errors.New("entry: token is for another event")
	ErrOtherIssuer = errors.New("entry: token is from another issuer")
	ErrNotYetValid = errors.New("entry: token is not valid yet")
)

const (
	// DefaultIssuer is the iss of a keyring not given the gateway's public
	// URL (WithIssuer).
	DefaultIssuer = "waitq"
	// Algorithm is the only signature algorithm tokens are signed and
	// verified with (RFC 8037's EdDSA, here Ed25519).
	Algorithm = jose.EdDSA
	maxLen    = 2048
	sigLen    = 86 // an Ed25519 signature in base64url without padding
)

// algorithms is what go-jose accepts in the header's alg: anything else
// ("none", HS256, RS256, …) fails to parse before any key is looked at.
var algorithms = []jose.SignatureAlgorithm{Algorithm}

// claims is the JSON a token signs. exp_ms keeps the stay's end to the
// millisecond, as Redis and the admitted frame have it; the registered
// claims are whole seconds, as every JWT library reads them.
type claims struct {
	Issuer    string `json:"iss"`
	Subject   string `json:"sub"`
	Audience  string `json:"aud"`
	IssuedAt  int64  `json:"iat"`
	NotBefore int64  `json:"nbf"`
	Expiry    int64  `json:"exp"`
	ID        string `json:"jti"`
	ExpiresMs int64  `json:"exp_ms"`
}

// DefaultSkew is the difference of clocks a Verifier tolerates for exp and
// nbf unless told otherwise: a token verifies until its exp plus this. The
// gateway lists a released admission (ReleasedSource) as long past its end.
const DefaultSkew = 2 * time.Second

// Verifier checks tokens against a set of public keys by key id.
type Verifier struct {
	keys map[string]ed25519.PublicKey
	// Skew is the difference of clocks tolerated for exp and nbf.
	Skew time.Duration
	// Issuer, when not empty, is the iss every token must carry (the
	// gateway's WAITQ_PUBLIC_URL).
	Issuer string
}

// NewVerifier returns a Verifier of the given public keys (key id → key).
func NewVerifier(keys map[string]ed25519.PublicKey) *Verifier {
	v := &Verifier{keys: map[string]ed25519.PublicKey{}, Skew: DefaultSkew}
	for id, k := range keys {
		v.keys[id] = k
	}
	return v
}

// Verify checks token's signature, issuer (when v.Issuer is set), validity
// period and, when eventID is not empty, that it was issued for that event
// (aud); it returns the claims also on ErrExpired and ErrOtherEvent.
func (v *Verifier) Verify(token, eventID string, now time.Time) (Token, error) {
	if len(token) > maxLen {
		return Token{}, ErrMalformed
	}
	if strings.HasPrefix(token, legacyPrefix) {
		return v.verifyLegacy(token, eventID, now)
	}
	if len(token)-strings.LastIndexByte(token, '.')-1 != sigLen {
		return Token{}, fmt.Errorf("%w: not an Ed25519 signature", ErrMalformed)
	}
	jws, err := jose.ParseSignedCompact(token, algorithms)
	if err != nil || len(jws.Signatures) != 1 {
		return Token{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	h := jws.Signatures[0].Header
	if err := checkHeader(h); err != nil {
		return Token{}, err
	}
	key, ok := v.keys[h.KeyID]
	if !ok {
		return Token{}, ErrUnknownKey
	}
	payload, err := jws.Verify(key)
	if err != nil {
		if errors.Is(err, jose.ErrCryptoFailure) {
			return Token{}, ErrSignature
		}
		return Token{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	// Only waitq signs with these keys: the claims are read as it writes
	// them (aud a string, times whole numbers), else the token is malformed.
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil || c.Subject == "" || c.Audience == "" || c.Expiry == 0 || c.ID == "" {
		return Token{}, ErrMalformed
	}
	std := jwt.Claims{Issuer: c.Issuer, Subject: c.Subject, Audience: jwt.Audience{c.Audience}, ID: c.ID,
		Expiry: date(c.Expiry), NotBefore: date(c.NotBefore), IssuedAt: date(c.IssuedAt)}
	t := Token{EventID: c.Audience, UserID: c.Subject, Expires: c.ExpiresMs, IssuedAt: c.IssuedAt * 1000,
		ID: c.ID, Issuer: c.Issuer, KeyID: h.KeyID}
	if t.Expires == 0 {
		t.Expires = c.Expiry * 1000
	}
	if now.UnixMilli() >= t.Expires+v.Skew.Milliseconds() {
		return t, ErrExpired
	}
	e := jwt.Expected{Issuer: v.Issuer, Time: now}
	if eventID != "" {
		e.AnyAudience = jwt.Audience{eventID}
	}
	switch err := std.ValidateWithLeeway(e, v.Skew); {
	case err == nil:
		return t, nil
	case errors.Is(err, jwt.ErrExpired):
		return t, ErrExpired
	case errors.Is(err, jwt.ErrInvalidAudience):
		return t, ErrOtherEvent
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return t, ErrOtherIssuer
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return t, ErrNotYetValid
	default:
		return t, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
}

func date(s int64) *jwt.NumericDate { d := jwt.NumericDate(s); return &d }

// checkHeader refuses every header parameter but alg (EdDSA, checked by
// the parse), kid and typ: a key or a URL to fetch one (jwk, jku, x5u,
// x5c) is never followed, and a token that names one is not ours.
func checkHeader(h jose.Header) error {
	if h.KeyID == "" {
		return fmt.Errorf("%w: no kid", ErrMalformed)
	}
	if h.JSONWebKey != nil || h.Nonce != "" {
		return fmt.Errorf("%w: header names a key", ErrMalformed)
	}
	if _, err := h.Certificates(x509.VerifyOptions{}); !errors.Is(err, jose.ErrMissingX5cHeader) {
		return fmt.Errorf("%w: header carries x5c", ErrMalformed)
	}
	for k, val := range h.ExtraHeaders {
		if k != jose.HeaderType || val != "JWT" {
			return fmt.Errorf("%w: header %q not accepted", ErrMalformed, string(k))
		}
	}
	return nil
}

// AdmissionID is the jti of the admission of userID to eventID whose hold
// ends at expiresMs: derived, so every gateway signing that admission (a
// stream resumed on another) gives its token the same id, and a refusal
// list holding it refuses every copy.
func AdmissionID(eventID, userID string, expiresMs int64) string {
	h := sha256.New()
	for _, s := range []string{"waitq admission v1", eventID, userID, strconv.FormatInt(expiresMs, 10)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// Keyring signs with one key and verifies with it and any older keys.
type Keyring struct {
	*Verifier
	kid    string
	signer jose.Signer
}

// NewKeyring signs with seed (32 bytes) under key id kid and also accepts
// tokens of the old public keys. Its tokens' iss is DefaultIssuer until
// WithIssuer.
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
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: Algorithm, Key: jose.JSONWebKey{Key: priv, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("entry: signer: %w", err)
	}
	v := NewVerifier(keys)
	v.Issuer = DefaultIssuer
	return &Keyring{Verifier: v, kid: kid, signer: signer}, nil
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

// WithIssuer returns a keyring of k's keys whose tokens carry iss (the
// gateway's public URL; empty: DefaultIssuer) and whose Verify requires it.
func (k *Keyring) WithIssuer(iss string) *Keyring {
	if iss == "" {
		iss = DefaultIssuer
	}
	v := *k.Verifier // the key map is never written after NewVerifier
	v.Issuer = iss
	return &Keyring{Verifier: &v, kid: k.kid, signer: k.signer}
}

// KeyID is the id of the signing key.
func (k *Keyring) KeyID() string { return k.kid }

// Sign returns the JWT for t, signed with the current key: t's ID (or
// AdmissionID when empty), the keyring's issuer, nbf = iat.
func (k *Keyring) Sign(t Token) string {
	c := claims{
		Issuer: k.Issuer, Subject: t.UserID, Audience: t.EventID,
		IssuedAt: t.IssuedAt / 1000, NotBefore: t.IssuedAt / 1000,
		Expiry: (t.Expires + 999) / 1000, ID: t.ID, ExpiresMs: t.Expires,
	}
	if c.ID == "" {
		c.ID = AdmissionID(t.EventID, t.UserID, t.Expires)
	}
	payload, _ := json.Marshal(c) // strings and ints cannot fail
	jws, err := k.signer.Sign(payload)
	if err != nil {
		panic("entry: Ed25519 signing failed: " + err.Error()) // only on a broken key, which NewKeyring refuses
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		panic("entry: serializing a JWS: " + err.Error())
	}
	return s
}

// JWKS returns the verifier's public keys as a JWK Set (RFC 8037), sorted
// by key id.
func (v *Verifier) JWKS() []byte {
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	for _, id := range slices.Sorted(maps.Keys(v.keys)) {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: v.keys[id], KeyID: id, Algorithm: string(Algorithm), Use: "sig"})
	}
	b, _ := json.Marshal(set) // Ed25519 public keys always marshal
	return b
}

// ParseJWKS returns a Verifier of the Ed25519 keys of a JWK Set; keys of
// other types are left out.
func ParseJWKS(b []byte) (*Verifier, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("entry: parse JWKS: %w", err)
	}
	keys := map[string]ed25519.PublicKey{}
	for _, raw := range set.Keys {
		var probe struct{ Kty, Crv, Kid string }
		if json.Unmarshal(raw, &probe) != nil || probe.Kty != "OKP" || probe.Crv != "Ed25519" {
			continue
		}
		var k jose.JSONWebKey
		err := k.UnmarshalJSON(raw)
		pub, ok := k.Key.(ed25519.PublicKey)
		if err != nil || !ok || k.KeyID == "" || (k.Algorithm != "" && k.Algorithm != string(Algorithm)) || (k.Use != "" && k.Use != "sig") {
			return nil, fmt.Errorf("entry: JWKS key %q is not a valid Ed25519 public key for EdDSA", probe.Kid)
		}
		keys[k.KeyID] = pub
	}
	if len(keys) == 0 {
		return nil, errors.New("entry: JWKS holds no Ed25519 key")
	}
	return NewVerifier(keys), nil
}

// FetchJWKS gets a gateway's keys from url (…/.well-known/jwks.json).
func FetchJWKS(ctx context.Context, c *http.Client, url string) (*Verifier, error) {
	b, err := fetch(ctx, c, url, "JWKS", 1<<20)
	if err != nil {
		return nil, err
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

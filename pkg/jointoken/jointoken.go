package jointoken

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/waitq/waitq/internal/b64"
)

const (
	// MaxLen is the longest token Verify parses, in bytes (4 KiB).
	MaxLen = 4096
	// Leeway is the difference of clocks tolerated between the shop that
	// mints and waitq that verifies: a token is taken up to Leeway after
	// its exp and from Leeway before its nbf (or iat).
	Leeway = 30 * time.Second
	// MaxLifetime is how far ahead of now a token's exp may lie: a token
	// valid for longer is refused, so that a leaked one cannot be used
	// for months and a one-time id need not be remembered for ever.
	MaxLifetime = 30 * 24 * time.Hour
)

// Claims is what a join token says.
type Claims struct {
	// Subject is the shop's account id (sub), the waitq user id of the
	// join.
	Subject string
	// EventID is the event the token admits to (aud).
	EventID string
	// Expiry is when the token stops being valid (exp, whole seconds).
	Expiry time.Time
	// NotBefore is when it starts being valid (nbf; zero: at once).
	NotBefore time.Time
	// IssuedAt is when it was minted (iat; zero: not said).
	IssuedAt time.Time
	// ID is the one-time id (jti; empty: a token usable until it
	// expires). Verify returns it; remembering used ids is the caller's.
	ID string
	// KeyID is the kid of the key that verified the token (Verify fills
	// it in; Mint uses the key's).
	KeyID string
}

// ErrInvalid is wrapped by every refusal of Verify; the more precise
// errors below wrap it, and the error's text says why.
var ErrInvalid = errors.New("jointoken: invalid join token")

// The refusals of Verify, each wrapping ErrInvalid.
var (
	ErrMalformed    = fmt.Errorf("%w: malformed", ErrInvalid)
	ErrAlgorithm    = fmt.Errorf("%w: algorithm not accepted", ErrInvalid)
	ErrUnknownKey   = fmt.Errorf("%w: unknown key", ErrInvalid)
	ErrSignature    = fmt.Errorf("%w: signature does not match", ErrInvalid)
	ErrMissingClaim = fmt.Errorf("%w: missing claim", ErrInvalid)
	ErrOtherEvent   = fmt.Errorf("%w: for another event", ErrInvalid)
	ErrExpired      = fmt.Errorf("%w: expired", ErrInvalid)
	ErrNotYetValid  = fmt.Errorf("%w: not valid yet", ErrInvalid)
	ErrLifetime     = fmt.Errorf("%w: valid for too long", ErrInvalid)
)

// Mint returns c as a compact JWS signed with k: header
// {"alg":…,"kid":…,"typ":"JWT"}, claims sub, aud (a string), exp, and nbf,
// iat, jti when set. k must hold a secret (HS256) or a private key
// (EdDSA); c needs a Subject, an EventID and an Expiry.
func Mint(k Key, c Claims) (string, error) {
	if err := k.Validate(); err != nil {
		return "", err
	}
	var key any = k.Secret
	if k.Alg == EdDSA {
		if k.PrivateKey == nil {
			return "", fmt.Errorf("%w: key %s: minting with EdDSA needs the private key", ErrKey, k.ID)
		}
		key = k.PrivateKey
	}
	if c.Subject == "" || c.EventID == "" || c.Expiry.IsZero() {
		return "", errors.New("jointoken: mint: a token needs a Subject, an EventID and an Expiry")
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(k.Alg), Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.ID))
	if err != nil {
		return "", fmt.Errorf("jointoken: mint: %w", err)
	}
	std := jwt.Claims{Subject: c.Subject, Audience: jwt.Audience{c.EventID}, Expiry: jwt.NewNumericDate(c.Expiry), ID: c.ID}
	if !c.NotBefore.IsZero() {
		std.NotBefore = jwt.NewNumericDate(c.NotBefore)
	}
	if !c.IssuedAt.IsZero() {
		std.IssuedAt = jwt.NewNumericDate(c.IssuedAt)
	}
	s, err := jwt.Signed(signer).Claims(std).Serialize()
	if err != nil {
		return "", fmt.Errorf("jointoken: mint: %w", err)
	}
	return s, nil
}

// Verify returns the claims of token if it is a join token for eventID,
// valid at now and signed with the key of keys registered under its kid
// with that key's algorithm. Every refusal wraps ErrInvalid and one of the
// errors above, with the reason in its text; see the package comment for
// what is refused.
func Verify(token string, keys []Key, eventID string, now time.Time) (Claims, error) {
	if len(token) > MaxLen {
		return Claims{}, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxLen)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Claims{}, fmt.Errorf("%w: not three dot-separated parts (a compact JWS)", ErrMalformed)
	}
	for i, p := range parts {
		if _, err := b64.Decode(p); err != nil || p == "" {
			return Claims{}, fmt.Errorf("%w: part %d is not canonical unpadded base64url", ErrMalformed, i+1)
		}
	}
	raw, _ := b64.Decode(parts[0])
	alg, kid, err := readHeader(raw)
	if err != nil {
		return Claims{}, err
	}
	key, err := find(keys, kid)
	if err != nil {
		return Claims{}, err
	}
	if alg != key.Alg {
		return Claims{}, fmt.Errorf("%w: alg %s, but key %s is %s", ErrAlgorithm, alg, kid, key.Alg)
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var std jwt.Claims
	if err := tok.Claims(key.verifier(), &std); err != nil {
		if errors.Is(err, jose.ErrCryptoFailure) {
			return Claims{}, fmt.Errorf("%w: key %s", ErrSignature, kid)
		}
		return Claims{}, fmt.Errorf("%w: claims: %v", ErrMalformed, err)
	}
	return check(std, kid, eventID, now)
}

// readHeader returns the alg and kid of a JOSE header that holds nothing
// else but typ "JWT": a key or a URL to fetch one (jwk, jku, x5u, x5c),
// crit, b64 and every other name are refused, as are names given twice
// and values that are not strings.
func readHeader(raw []byte) (alg, kid string, err error) {
	seen := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", "", fmt.Errorf("%w: header is not a JSON object", ErrMalformed)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", "", fmt.Errorf("%w: header is not JSON", ErrMalformed)
		}
		name, _ := t.(string)
		if name != "alg" && name != "kid" && name != "typ" {
			return "", "", fmt.Errorf("%w: header %q not accepted (only alg, kid and typ)", ErrMalformed, clip(name))
		}
		if _, dup := seen[name]; dup {
			return "", "", fmt.Errorf("%w: header %s given twice", ErrMalformed, name)
		}
		v, err := dec.Token()
		s, ok := v.(string)
		if err != nil || !ok {
			return "", "", fmt.Errorf("%w: header %s is not a string", ErrMalformed, name)
		}
		seen[name] = s
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') || dec.More() {
		return "", "", fmt.Errorf("%w: header is not one JSON object", ErrMalformed)
	}
	if _, err := dec.Token(); err == nil {
		return "", "", fmt.Errorf("%w: header is not one JSON object", ErrMalformed)
	}
	alg, kid = seen["alg"], seen["kid"]
	switch typ, ok := seen["typ"]; {
	case alg == "none" || alg == "":
		return "", "", fmt.Errorf("%w: alg %q: a join token must be signed", ErrAlgorithm, alg)
	case alg != HS256 && alg != EdDSA:
		return "", "", fmt.Errorf("%w: alg %q (only %s and %s)", ErrAlgorithm, clip(alg), HS256, EdDSA)
	case kid == "":
		return "", "", fmt.Errorf("%w: header has no kid", ErrUnknownKey)
	case ok && typ != "JWT":
		return "", "", fmt.Errorf("%w: typ %q (only JWT)", ErrMalformed, clip(typ))
	}
	return alg, kid, nil
}

// find returns the one valid key of keys registered under kid.
func find(keys []Key, kid string) (Key, error) {
	if !ValidKeyID(kid) {
		return Key{}, fmt.Errorf("%w: kid is not 1-%d characters of [A-Za-z0-9._-]", ErrUnknownKey, MaxKeyIDLen)
	}
	var found []Key
	for _, k := range keys {
		if k.ID == kid {
			found = append(found, k)
		}
	}
	switch {
	case len(found) == 0:
		return Key{}, fmt.Errorf("%w: kid %s is not registered", ErrUnknownKey, kid)
	case len(found) > 1:
		return Key{}, fmt.Errorf("%w: kid %s is registered %d times", ErrUnknownKey, kid, len(found))
	}
	if err := found[0].Validate(); err != nil {
		return Key{}, fmt.Errorf("%w: %v", ErrUnknownKey, err)
	}
	return found[0], nil
}

// check turns verified claims into Claims, refusing missing ones, another
// event, and a time outside the token's validity or too far from it.
func check(std jwt.Claims, kid, eventID string, now time.Time) (Claims, error) {
	switch {
	case std.Subject == "":
		return Claims{}, fmt.Errorf("%w: sub", ErrMissingClaim)
	case len(std.Audience) == 0:
		return Claims{}, fmt.Errorf("%w: aud", ErrMissingClaim)
	case std.Expiry == nil:
		return Claims{}, fmt.Errorf("%w: exp", ErrMissingClaim)
	case eventID == "":
		return Claims{}, fmt.Errorf("%w: no event given to check aud against", ErrOtherEvent)
	case !std.Audience.Contains(eventID):
		return Claims{}, fmt.Errorf("%w: aud does not name event %s", ErrOtherEvent, clip(eventID))
	}
	c := Claims{Subject: std.Subject, EventID: eventID, Expiry: std.Expiry.Time(), ID: std.ID, KeyID: kid}
	if std.NotBefore != nil {
		c.NotBefore = std.NotBefore.Time()
	}
	if std.IssuedAt != nil {
		c.IssuedAt = std.IssuedAt.Time()
	}
	switch err := std.ValidateWithLeeway(jwt.Expected{Time: now}, Leeway); {
	case errors.Is(err, jwt.ErrExpired):
		return Claims{}, fmt.Errorf("%w: exp %s is past", ErrExpired, c.Expiry.UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrNotValidYet):
		return Claims{}, fmt.Errorf("%w: nbf %s is ahead", ErrNotYetValid, c.NotBefore.UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return Claims{}, fmt.Errorf("%w: iat %s is ahead", ErrNotYetValid, c.IssuedAt.UTC().Format(time.RFC3339))
	case err != nil:
		return Claims{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	case c.Expiry.Sub(now) > MaxLifetime+Leeway:
		return Claims{}, fmt.Errorf("%w: exp %s is more than %d days ahead", ErrLifetime, c.Expiry.UTC().Format(time.RFC3339), MaxLifetime/(24*time.Hour))
	}
	return c, nil
}

// clip shortens what a token says for an error's text.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

package entry

// The token format before JWTs, "e2.<kid>.<base64url JSON {"e","u","x","iat"}>.<base64url
// Ed25519 signature of everything before the last dot>. Nothing signs it any
// more; tokens a gateway of the previous release issued still verify, with
// the same keys, until the longest stay after the upgrade has passed
// (docs/api.md, "Upgrading from e2 tokens"). Token.Legacy marks them, and
// waitq counts them (waitq_guard_legacy_tokens_total,
// waitq_gateway_legacy_entry_tokens_total). Remove this file in the release
// after.

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/b64"
)

const legacyPrefix = "e2."

// legacyClaims are an e2 token's claims.
type legacyClaims struct {
	EventID  string `json:"e"`
	UserID   string `json:"u"`
	Expires  int64  `json:"x"`
	IssuedAt int64  `json:"iat"`
}

// verifyLegacy is Verify for an e2 token: the signature, the expiry (with
// v.Skew) and the event. An e2 token has no issuer, so v.Issuer is not
// checked: during the upgrade, configuring the issuer must not refuse the
// tokens already out.
func (v *Verifier) verifyLegacy(token, eventID string, now time.Time) (Token, error) {
	parts := strings.Split(token[len(legacyPrefix):], ".")
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
	var c legacyClaims
	if err != nil || json.Unmarshal(raw, &c) != nil || c.EventID == "" || c.UserID == "" {
		return Token{}, ErrMalformed
	}
	t := Token{EventID: c.EventID, UserID: c.UserID, Expires: c.Expires, IssuedAt: c.IssuedAt,
		ID: AdmissionID(c.EventID, c.UserID, c.Expires), KeyID: kid, Legacy: true}
	if now.UnixMilli() >= t.Expires+v.Skew.Milliseconds() {
		return t, ErrExpired
	}
	if eventID != "" && t.EventID != eventID {
		return t, ErrOtherEvent
	}
	return t, nil
}

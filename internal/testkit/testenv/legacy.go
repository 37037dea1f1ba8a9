package testenv

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
)

// LegacyEntryToken mints an entry token of the format before JWTs,
// "e2.<kid>.<claims>.<signature>", signed with the Ed25519 key of seed, as
// a gateway of the previous release did: what verifiers still accept
// during the upgrade (docs/integration.md) and count apart.
func LegacyEntryToken(kid string, seed []byte, ev, user string, expires int64) string {
	claims, _ := json.Marshal(map[string]any{"e": ev, "u": user, "x": expires, "iat": expires - 60_000})
	body := "e2." + kid + "." + base64.RawURLEncoding.EncodeToString(claims)
	return body + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(ed25519.NewKeyFromSeed(seed), []byte(body)))
}

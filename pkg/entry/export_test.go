package entry

import (
	"crypto/ed25519"
	"encoding/json"

	"github.com/waitq/waitq/internal/b64"
)

// SignLegacy mints an e2 token (the format before JWTs) with seed's key
// under kid, as a gateway of the previous release did: the tests of the
// upgrade path and the benchmark's baseline need them, the product no
// longer makes them.
func SignLegacy(kid string, seed []byte, t Token) string {
	claims, _ := json.Marshal(legacyClaims{EventID: t.EventID, UserID: t.UserID, Expires: t.Expires, IssuedAt: t.IssuedAt})
	body := legacyPrefix + kid + "." + b64.Encode(claims)
	return body + "." + b64.Encode(ed25519.Sign(ed25519.NewKeyFromSeed(seed), []byte(body)))
}

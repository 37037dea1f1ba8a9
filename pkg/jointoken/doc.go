// Package jointoken mints and verifies join tokens: the shop's word, signed,
// that one of its accounts may join one event's waiting room. An event that
// requires them ("invite only") takes a join only with a token; its sub (the
// shop's account id) becomes the waitq user id, so one account holds one
// place however many browsers it opens.
//
// A join token is a JWT (RFC 7519) in the JWS compact serialization: header
// {"alg":…,"kid":…,"typ":"JWT"}, claims sub (the account), aud (the event
// id, a string or an array holding it), exp, and optionally nbf, iat and jti
// (a one-time id: the caller remembers used ones, this package only returns
// it). It is signed either with a shared secret (HS256, HMAC-SHA256, at
// least 32 bytes) or with an Ed25519 key whose public half waitq holds
// (EdDSA, RFC 8037). Several keys, told apart by kid, may be registered at
// once: that is how a shop rotates keys without downtime.
//
// Verify refuses by construction rather than by configuration: the key is
// the one registered under the header's kid and nothing else, and the
// header's alg must be that key's (so an HS256 token "signed" with an
// Ed25519 public key as its secret never verifies); alg none, any other
// alg, and every header but alg, kid and typ (jku, x5u, jwk, x5c, crit,
// b64, …) are refused before a signature is checked; every part must be
// canonical unpadded base64url; tokens longer than MaxLen are not parsed.
// Time checks allow Leeway of clock difference, and a token whose exp lies
// more than MaxLifetime ahead is refused. Signing, parsing and the signature
// check are go-jose's (github.com/go-jose/go-jose/v4).
//
// Mint and Verify are pure functions of their arguments, safe for
// concurrent use.
package jointoken

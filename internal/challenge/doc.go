// Package challenge is waitq's proof-of-work: producer-api issues a
// challenge bound to an event and a visitor, the visitor's browser (a Web
// Worker using SubtleCrypto, internal/web/static/pow-worker.js) or a Go or
// Python client (Solve, scripts/pow.py) finds a solution, and producer-api
// verifies it in a few microseconds before it takes the join. The scheme is
// hashcash's, with SHA-256 and an HMAC that binds the challenge to the event,
// the visitor and an expiry, so the server keeps no state until a solution
// comes back.
//
// # The scheme, version 1
//
// A challenge (a token) is the ASCII string
//
//	c1.<payload>.<mac>
//
// where <payload> is the unpadded base64url (RFC 4648 §5, no '=' and no
// other characters) of this record, integers big-endian:
//
//	offset  size  field
//	0       1     key id: the first byte of SHA-256(key) of the signing key
//	1       1     difficulty: leading zero bits asked for (1 to 255)
//	2       8     expiresAt: unix milliseconds, unsigned
//	10      16    salt: random bytes; its base64url is the challenge's ID
//	26      1     E: length of the event id in bytes (1 to 255)
//	27      E     the event id
//	27+E    1     S: length of the subject (the visitor's user id; 1 to 255)
//	28+E    S     the subject
//
// and nothing after the subject. <mac> is the unpadded base64url of the
// first 16 bytes of HMAC-SHA256(key, "c1." + <payload>), <payload> being
// the text exactly as in the token. Base64url is canonical: the unused low
// bits of the last character are zero, so every challenge has one spelling.
//
// A solution is a nonce N written in decimal ASCII digits, 1 to 20 of them,
// without leading zeros ("0" is the only nonce that starts with 0), such
// that SHA-256(token + ":" + N), over the ASCII bytes, starts with at least
// difficulty zero bits: the first difficulty/8 bytes of the digest are 0
// and, when difficulty%8 is not 0, the next byte shifted right by
// 8-difficulty%8 is 0. A solver reads the difficulty from byte 1 of the
// decoded payload (no key needed: Parse) and tries N = 0, 1, 2, ... in any
// order; it expects 2^difficulty tries, and the number of tries is
// geometric (the unlucky 5% need three times the expected work).
//
// # Verification
//
// Verify takes a solution when all of these hold, and otherwise answers a
// queue.CodeInvalidChallenge error whose message says which failed, in this
// order: the token is well formed; its MAC is right under one of the
// issuer's keys (compared in constant time; only keys whose key id matches
// byte 0 are tried, so a verifier with k keys usually computes one HMAC);
// it has not expired (now < expiresAt, by the issuer's clock, no leeway);
// its event and subject are the ones the join is for; its difficulty is at
// least the event's current minimum (queue.ChallengePolicy.
// MinimumDifficulty, so raising a fixed difficulty refuses challenges issued
// before); the solution is well formed; and it meets the difficulty. It
// costs two SHA-256 passes over about 100 bytes and an HMAC: a few
// microseconds (BenchmarkVerify).
//
// A solution is good once: Verify does not remember it. The caller records
// the challenge's ID until its ExpiresAt (the replay store, in Redis) and
// refuses a second use with queue.CodeChallengeUsed; after ExpiresAt Verify
// refuses the challenge on its own, so the record may then go.
//
// # Keys
//
// An Issuer holds one or more HMAC keys of at least 32 bytes. The first
// signs; all verify. To rotate, put a new key first and keep the old one
// until every challenge it signed has expired (the longest TTL issued), then
// drop it: its challenges then fail as forged.
//
// An Issuer is safe for concurrent use; Parse and Solve are plain functions.
package challenge

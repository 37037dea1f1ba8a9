package jointoken

import (
	"crypto/ed25519"
	"crypto/subtle"
	"errors"
	"fmt"
)

// The algorithms a join token may be signed with, as the JWS header's alg
// names them.
const (
	// HS256 is HMAC-SHA256 with a secret shared by the shop and waitq.
	HS256 = "HS256"
	// EdDSA is Ed25519: the shop signs with its private key, waitq holds
	// only the public key.
	EdDSA = "EdDSA"
)

const (
	// MinSecretLen is the shortest HS256 secret accepted, in bytes (the
	// size of the hash, as RFC 7518 asks).
	MinSecretLen = 32
	// MaxKeyIDLen is the longest key id.
	MaxKeyIDLen = 64
)

// ErrKey is wrapped by every error about a Key itself (not a token): a kid,
// algorithm or key material that cannot work.
var ErrKey = errors.New("jointoken: invalid key")

// Key is a key join tokens are signed or verified with, registered under
// its ID (the JWS kid).
type Key struct {
	// ID is the key id, the header's kid: 1–64 characters of
	// [A-Za-z0-9._-].
	ID string
	// Alg is HS256 or EdDSA: the only algorithm a token under this kid
	// may name.
	Alg string
	// Secret is the HS256 secret, at least MinSecretLen bytes.
	Secret []byte
	// PublicKey is the EdDSA key tokens are verified with. It may be left
	// empty when PrivateKey is set.
	PublicKey ed25519.PublicKey
	// PrivateKey is the EdDSA key tokens are minted with (the shop's
	// only; waitq never needs it).
	PrivateKey ed25519.PrivateKey
}

// HMACKey returns the HS256 key of secret under kid, or an error wrapping
// ErrKey.
func HMACKey(kid string, secret []byte) (Key, error) {
	k := Key{ID: kid, Alg: HS256, Secret: secret}
	return k, k.Validate()
}

// Ed25519Key returns the EdDSA key that verifies tokens under kid with pub,
// or an error wrapping ErrKey.
func Ed25519Key(kid string, pub ed25519.PublicKey) (Key, error) {
	k := Key{ID: kid, Alg: EdDSA, PublicKey: pub}
	return k, k.Validate()
}

// Ed25519SigningKey returns the EdDSA key that mints (and verifies) tokens
// under kid with priv, or an error wrapping ErrKey.
func Ed25519SigningKey(kid string, priv ed25519.PrivateKey) (Key, error) {
	k := Key{ID: kid, Alg: EdDSA, PrivateKey: priv}
	if err := k.Validate(); err != nil {
		return k, err
	}
	k.PublicKey = k.public()
	return k, nil
}

// ValidKeyID reports whether kid is 1–64 characters of [A-Za-z0-9._-].
func ValidKeyID(kid string) bool {
	if len(kid) == 0 || len(kid) > MaxKeyIDLen {
		return false
	}
	for i := 0; i < len(kid); i++ {
		c := kid[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Validate reports why k cannot verify tokens, wrapping ErrKey: a bad kid,
// an algorithm other than HS256 and EdDSA, an HS256 key without a secret
// of MinSecretLen bytes or with Ed25519 material, an EdDSA key with a
// secret, without a key, with a key of the wrong size, or whose public key
// is not its private key's.
func (k Key) Validate() error {
	if !ValidKeyID(k.ID) {
		return fmt.Errorf("%w: kid %q must be 1-%d characters of [A-Za-z0-9._-]", ErrKey, k.ID, MaxKeyIDLen)
	}
	switch k.Alg {
	case HS256:
		if len(k.Secret) < MinSecretLen {
			return fmt.Errorf("%w: key %s: an HS256 secret must be at least %d bytes, not %d", ErrKey, k.ID, MinSecretLen, len(k.Secret))
		}
		if k.PublicKey != nil || k.PrivateKey != nil {
			return fmt.Errorf("%w: key %s: an HS256 key holds a secret, not an Ed25519 key", ErrKey, k.ID)
		}
	case EdDSA:
		if k.Secret != nil {
			return fmt.Errorf("%w: key %s: an EdDSA key holds an Ed25519 key, not a secret", ErrKey, k.ID)
		}
		if k.PrivateKey != nil && len(k.PrivateKey) != ed25519.PrivateKeySize {
			return fmt.Errorf("%w: key %s: an Ed25519 private key is %d bytes, not %d", ErrKey, k.ID, ed25519.PrivateKeySize, len(k.PrivateKey))
		}
		if k.PrivateKey == nil && len(k.PublicKey) != ed25519.PublicKeySize {
			return fmt.Errorf("%w: key %s: an Ed25519 public key is %d bytes, not %d", ErrKey, k.ID, ed25519.PublicKeySize, len(k.PublicKey))
		}
		if k.PrivateKey != nil && k.PublicKey != nil && subtle.ConstantTimeCompare(k.PrivateKey.Public().(ed25519.PublicKey), k.PublicKey) != 1 {
			return fmt.Errorf("%w: key %s: the public key is not the private key's", ErrKey, k.ID)
		}
	default:
		return fmt.Errorf("%w: key %s: alg %q must be %s or %s", ErrKey, k.ID, k.Alg, HS256, EdDSA)
	}
	return nil
}

// verifier is what go-jose checks a signature of k with.
func (k Key) verifier() any {
	if k.Alg == HS256 {
		return k.Secret
	}
	return k.public()
}

// public is k's Ed25519 public key, the private key's when not given.
func (k Key) public() ed25519.PublicKey {
	if k.PublicKey == nil && len(k.PrivateKey) == ed25519.PrivateKeySize {
		return k.PrivateKey.Public().(ed25519.PublicKey)
	}
	return k.PublicKey
}

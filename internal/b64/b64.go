// Package b64 decodes unpadded base64url for signed tokens with exactly one
// spelling per value: only the URL-safe alphabet (no CR or LF, which Go's
// decoders skip) and zero unused bits in the last character (Strict). Both
// were found by fuzzing tickets and entry tokens.
package b64

import (
	"encoding/base64"
	"errors"
)

var strict = base64.RawURLEncoding.Strict()

// ErrInvalid is returned for any text that is not canonical base64url.
var ErrInvalid = errors.New("b64: not canonical unpadded base64url")

// Decode decodes canonical unpadded base64url.
func Decode(s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return nil, ErrInvalid
		}
	}
	b, err := strict.DecodeString(s)
	if err != nil {
		return nil, ErrInvalid
	}
	return b, nil
}

// Encode encodes b as unpadded base64url.
func Encode(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// AppendEncode appends Encode(b) to dst.
func AppendEncode(dst, b []byte) []byte { return base64.RawURLEncoding.AppendEncode(dst, b) }

// EncodedLen is the length of Encode of n bytes.
func EncodedLen(n int) int { return base64.RawURLEncoding.EncodedLen(n) }

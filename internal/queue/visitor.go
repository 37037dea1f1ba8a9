package queue

import (
	"crypto/rand"
	"errors"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/b64"
)

// VisitorPrefix starts every visitor id waitq issues. No other kind of
// user id may start with it (a join token's subject, a trusted X-User-Id),
// so an anonymous visitor's id is never an account's.
const VisitorPrefix = "v:"

// DefaultVisitorTTL is how long a visitor identity lasts when nothing else
// is configured: longer than any sale, so a browser reopened days later is
// still the same person.
const DefaultVisitorTTL = 30 * 24 * time.Hour

// Visitor is the identity waitq gives an anonymous visitor: a random id
// (VisitorPrefix and 22 base64url characters, 128 random bits) and when it
// ends. producer-api hands it out in a signed HttpOnly cookie; it is the
// user id of the visitor's joins, so one browser holds one place per event.
type Visitor struct {
	ID      string `json:"v"`
	Expires int64  `json:"x"` // unix ms
}

// Visitor verification errors. All carry CodeInvalidIdentity.
var (
	ErrVisitorMalformed = &Error{Code: CodeInvalidIdentity, Message: "the visitor identity is malformed"}
	ErrVisitorSignature = &Error{Code: CodeInvalidIdentity, Message: "the visitor identity's signature does not match (forged, or signed with another secret)"}
	ErrVisitorExpired   = &Error{Code: CodeInvalidIdentity, Message: "the visitor identity has expired"}
)

// NewVisitor returns a fresh visitor identity valid until now+ttl.
func NewVisitor(now time.Time, ttl time.Duration) Visitor {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return Visitor{ID: VisitorPrefix + b64.Encode(b[:]), Expires: now.Add(ttl).UnixMilli()}
}

// IsVisitorID reports whether id has the form of an issued visitor id.
func IsVisitorID(id string) bool {
	return strings.HasPrefix(id, VisitorPrefix) && len(id) == len(VisitorPrefix)+22 && ValidUserID(id)
}

// CheckNamedUserID returns nil for a user id that something other than
// waitq's visitor identity names (a trusted X-User-Id, a join token's sub),
// else the contract's invalid_user_id error: an invalid id, or one that
// starts with VisitorPrefix, which would take over a visitor's place,
// ticket and entry token.
func CheckNamedUserID(id string) error {
	if err := CheckUserID(id); err != nil {
		return err
	}
	if strings.HasPrefix(id, VisitorPrefix) {
		return Errorf(CodeInvalidUserID, "a user id must not start with %q: those are the visitor ids waitq issues", VisitorPrefix)
	}
	return nil
}

// SignVisitor returns the opaque identity token of v (the cookie's value).
func (s *TicketSigner) SignVisitor(v Visitor) string { return s.visitor.sign(v) }

// VerifyVisitor checks the signature and expiry of an identity token and
// returns the visitor it names; its errors carry CodeInvalidIdentity.
func (s *TicketSigner) VerifyVisitor(token string, now time.Time) (Visitor, error) {
	var v Visitor
	if err := s.visitor.open(token, &v); err != nil {
		if errors.Is(err, ErrTicketSignature) {
			return Visitor{}, ErrVisitorSignature
		}
		return Visitor{}, ErrVisitorMalformed
	}
	if !IsVisitorID(v.ID) {
		return Visitor{}, ErrVisitorMalformed
	}
	if now.UnixMilli() >= v.Expires {
		return Visitor{}, ErrVisitorExpired
	}
	return v, nil
}

// RandomKey returns 32 random bytes: a key for one process when none is
// configured.
func RandomKey() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return b
}

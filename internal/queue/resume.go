package queue

import (
	"crypto/rand"
	"time"

	"github.com/waitq/waitq/internal/b64"
)

// Resume: a link that carries a place to another browser or device. It
// names one event, the user whose place it is and the place itself (the
// score it holds in the line, or the one a called turn left), so a later
// place of the same user is not carried by an old link; it is signed with
// the tickets' secret under a key of its own, ends at Expires, and its
// Nonce is spent by the first use (one use only).

// Resume is what a resume link binds.
type Resume struct {
	EventID string `json:"e"`
	UserID  string `json:"u"`
	Place   int64  `json:"p"` // the place's score: a join stamp, or a drawn score
	Nonce   string `json:"n"` // 16 random bytes, base64url: spent by the first use
	Expires int64  `json:"x"` // unix ms
}

// NewResume returns the resume of user's place in event, valid until
// now+ttl, with a fresh nonce.
func NewResume(event, user string, place int64, now time.Time, ttl time.Duration) Resume {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return Resume{EventID: event, UserID: user, Place: place, Nonce: b64.Encode(b[:]), Expires: now.Add(ttl).UnixMilli()}
}

// SignResume returns the opaque token of r (the resume link's ?resume=).
func (s *TicketSigner) SignResume(r Resume) string { return s.resume.sign(r) }

// VerifyResume checks the signature and expiry of token and that it was
// made for eventID, and returns what it binds. Errors carry
// CodeInvalidTicket. Whether the nonce was spent, and whether the place is
// still the user's, is the store's to say.
func (s *TicketSigner) VerifyResume(token, eventID string, now time.Time) (Resume, error) {
	var r Resume
	if err := s.resume.open(token, &r); err != nil {
		return Resume{}, err
	}
	if !ValidEventID(r.EventID) || !ValidUserID(r.UserID) || len(r.Nonce) != 22 || r.Place == 0 {
		return Resume{}, ErrTicketMalformed
	}
	return r, checkClaims(r.EventID, r.Expires, eventID, now)
}

package queue

import (
	"context"
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

// Move is a resume link's use: the place Resume binds, moved to the user
// To (who opened the link) at NowMs (docs/data.md, "Resume links").
type Move struct {
	Resume Resume
	To     string
	NowMs  int64
}

// Moved is what a move did.
type Moved struct {
	// Same: the link was opened by the user it names (an account on two
	// devices): its nonce is spent, nothing moved, nothing to record.
	Same bool
	// Again: the link had moved the place to the same user before (the
	// answer was lost, or the page opened the link again): nothing changed;
	// its records are written again.
	Again bool
	// Score is the place's score; ClaimUntil the end of its claim window
	// when it is a called turn (0: a place in line); Served the served mark
	// the old user keeps (and the called turn's); At when it moved.
	Score, ClaimUntil, Served, At int64
}

// Records returns the records of mv, which made m: a moved record on the
// old user's key and a movedin one on the new user's (each user's
// messages share one partition, which replays them: Replay).
func (m Moved) Records(event string, mv Move) []Message {
	out := NewRecord(OpMoved, event, mv.Resume.UserID, m.At)
	out.Score, out.ServedMark, out.ID = m.Score, m.Served, mv.Resume.Nonce
	in := NewRecord(OpMovedIn, event, mv.To, m.At)
	in.Score, in.ID = m.Score, mv.Resume.Nonce
	if m.ClaimUntil > 0 {
		in.ExpiresAt, in.ServedMark = m.ClaimUntil, m.Served
	}
	return []Message{out, in}
}

// Held is the place a user holds: its score, and the end of its claim
// window when it is a called turn (0: waiting in line).
type Held struct {
	Score, ClaimUntil int64
}

// ErrNoPlace answers a resume link asked for by a user with no place: not
// waiting, not called.
var ErrNoPlace = &Error{Code: CodeNoPlace, Message: "you hold no place in this event's line to carry to another device"}

// ResumeStore is what resume links need of the live state.
type ResumeStore interface {
	// Holding returns the place userID holds in eventID, or ErrNoPlace.
	Holding(ctx context.Context, eventID, userID string) (Held, error)
	// Move moves the place m's link binds to m.To, atomically: errors
	// carry CodeResumeUsed, CodePlaceChanged, CodeAlreadyQueued,
	// ErrRebuilding or ErrEventNotFound, nothing changed.
	Move(ctx context.Context, m Move) (Moved, error)
	// Status reads where users stand (GatewayStore.Status).
	Status(ctx context.Context, eventID string, users []string, nowMs int64) (StatusBatch, error)
}

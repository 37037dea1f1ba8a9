package queue

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// MaxTicketLen bounds the size of a ticket string accepted for verification.
const MaxTicketLen = 1024

const ticketPrefix = "v1."

// Ticket binds a user's place in one event's line. A browser presents it to
// the gateway, which cannot read headers on a WebSocket upgrade.
type Ticket struct {
	EventID  string `json:"e"`
	UserID   string `json:"u"`
	JoinedAt int64  `json:"j"` // unix ms, the join stamp
	Expires  int64  `json:"x"` // unix ms
}

// Ticket verification errors. All carry CodeInvalidTicket.
var (
	ErrTicketMalformed  = &Error{Code: CodeInvalidTicket, Message: "ticket is malformed"}
	ErrTicketSignature  = &Error{Code: CodeInvalidTicket, Message: "ticket signature does not match"}
	ErrTicketExpired    = &Error{Code: CodeInvalidTicket, Message: "ticket has expired"}
	ErrTicketOtherEvent = &Error{Code: CodeInvalidTicket, Message: "ticket is for another event"}
)

// TicketSigner signs and verifies tickets with HMAC-SHA256. It is safe for
// concurrent use.
type TicketSigner struct {
	key []byte
}

// NewTicketSigner returns a signer keyed by secret, which must not be empty.
func NewTicketSigner(secret string) (*TicketSigner, error) {
	if secret == "" {
		return nil, errors.New("queue: empty ticket secret")
	}
	// Derive a purpose-bound key so the same secret can never produce a MAC
	// that is valid for another kind of token.
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("waitq ticket v1"))
	return &TicketSigner{key: m.Sum(nil)}, nil
}

// Sign returns the opaque ticket string for t.
func (s *TicketSigner) Sign(t Ticket) string {
	payload, _ := json.Marshal(t) // a struct of strings and ints cannot fail
	enc := base64.RawURLEncoding
	body := ticketPrefix + enc.EncodeToString(payload)
	return body + "." + enc.EncodeToString(s.mac(body))
}

// Verify checks the signature and expiry of ticket and that it was issued for
// eventID, and returns what it binds.
func (s *TicketSigner) Verify(ticket, eventID string, now time.Time) (Ticket, error) {
	if len(ticket) > MaxTicketLen || !strings.HasPrefix(ticket, ticketPrefix) {
		return Ticket{}, ErrTicketMalformed
	}
	dot := strings.LastIndexByte(ticket, '.')
	if dot <= len(ticketPrefix) {
		return Ticket{}, ErrTicketMalformed
	}
	body, sigText := ticket[:dot], ticket[dot+1:]
	enc := base64.RawURLEncoding
	sig, err := enc.DecodeString(sigText)
	if err != nil {
		return Ticket{}, ErrTicketMalformed
	}
	if !hmac.Equal(sig, s.mac(body)) {
		return Ticket{}, ErrTicketSignature
	}
	payload, err := enc.DecodeString(body[len(ticketPrefix):])
	if err != nil {
		return Ticket{}, ErrTicketMalformed
	}
	var t Ticket
	if err := json.Unmarshal(payload, &t); err != nil || !ValidEventID(t.EventID) || !ValidUserID(t.UserID) {
		return Ticket{}, ErrTicketMalformed
	}
	if now.UnixMilli() >= t.Expires {
		return Ticket{}, ErrTicketExpired
	}
	if t.EventID != eventID {
		return Ticket{}, ErrTicketOtherEvent
	}
	return t, nil
}

func (s *TicketSigner) mac(body string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

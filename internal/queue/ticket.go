package queue

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waitq/waitq/internal/b64"
)

// MaxTicketLen bounds the size of a ticket accepted for verification.
const MaxTicketLen = 1024

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
	ErrTicketMalformed  = &Error{Code: CodeInvalidTicket, Message: "token is malformed"}
	ErrTicketSignature  = &Error{Code: CodeInvalidTicket, Message: "token signature does not match"}
	ErrTicketExpired    = &Error{Code: CodeInvalidTicket, Message: "token has expired"}
	ErrTicketOtherEvent = &Error{Code: CodeInvalidTicket, Message: "token is for another event"}
)

// TicketSigner signs and verifies tickets and visitor identities
// (visitor.go) with HMAC-SHA256, each under a key derived from the secret
// for that purpose only. (Entry tokens are Ed25519,
// package entry.) It is safe for concurrent use.
type TicketSigner struct {
	ticket  signer
	visitor signer
	resume  signer
}

// NewTicketSigner returns a signer keyed by secret, which must not be empty.
func NewTicketSigner(secret string) (*TicketSigner, error) {
	if secret == "" {
		return nil, errors.New("queue: empty ticket secret")
	}
	return &TicketSigner{
		ticket:  newSigner(secret, "waitq ticket v1", "v1."),
		visitor: newSigner(secret, "waitq visitor v1", "vis1."),
		resume:  newSigner(secret, "waitq resume v1", "rs1."),
	}, nil
}

// Sign returns the opaque ticket string for t.
func (s *TicketSigner) Sign(t Ticket) string {
	var buf [128]byte
	return s.ticket.signPayload(t.appendJSON(buf[:0]))
}

// appendJSON appends t as encoding/json encodes it.
func (t Ticket) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"e":`...)
	dst = AppendJSONString(dst, t.EventID)
	dst = append(dst, `,"u":`...)
	dst = AppendJSONString(dst, t.UserID)
	dst = append(dst, `,"j":`...)
	dst = strconv.AppendInt(dst, t.JoinedAt, 10)
	dst = append(dst, `,"x":`...)
	dst = strconv.AppendInt(dst, t.Expires, 10)
	return append(dst, '}')
}

// Verify checks the signature and expiry of ticket and that it was issued for
// eventID, and returns what it binds.
func (s *TicketSigner) Verify(ticket, eventID string, now time.Time) (Ticket, error) {
	var t Ticket
	if err := s.ticket.open(ticket, &t); err != nil {
		return Ticket{}, err
	}
	if !ValidEventID(t.EventID) || !ValidUserID(t.UserID) {
		return Ticket{}, ErrTicketMalformed
	}
	return t, checkClaims(t.EventID, t.Expires, eventID, now)
}

func checkClaims(event string, expires int64, wantEvent string, now time.Time) error {
	if now.UnixMilli() >= expires {
		return ErrTicketExpired
	}
	if event != wantEvent {
		return ErrTicketOtherEvent
	}
	return nil
}

// signer makes "<prefix><base64url JSON>.<base64url HMAC>" tokens.
type signer struct {
	prefix string
	// macs holds HMAC states keyed for the signer's purpose (hash.Hash),
	// reset before each use.
	macs *sync.Pool
}

func newSigner(secret, purpose, prefix string) signer {
	key := DeriveKey(secret, purpose)
	return signer{prefix: prefix, macs: &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}
}

// DeriveKey returns the key of one purpose drawn from a shared secret
// (HMAC-SHA256 of the purpose under the secret): the same secret never
// yields a MAC valid for another kind of token (tickets, visitor
// identities, challenges).
func DeriveKey(secret, purpose string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

func (s signer) sign(v any) string {
	payload, _ := json.Marshal(v) // structs of strings and ints cannot fail
	return s.signPayload(payload)
}

// signPayload returns the token of a JSON payload.
func (s signer) signPayload(payload []byte) string {
	n := len(s.prefix) + b64.EncodedLen(len(payload))
	tok := make([]byte, 0, n+1+b64.EncodedLen(sha256.Size))
	tok = append(tok, s.prefix...)
	tok = b64.AppendEncode(tok, payload)
	var sum [sha256.Size]byte
	mac := s.appendMAC(sum[:0], tok)
	tok = append(tok, '.')
	return string(b64.AppendEncode(tok, mac))
}

// open checks the signature of token and decodes its payload into v.
func (s signer) open(token string, v any) error {
	if len(token) > MaxTicketLen || !strings.HasPrefix(token, s.prefix) {
		return ErrTicketMalformed
	}
	dot := strings.LastIndexByte(token, '.')
	if dot <= len(s.prefix) {
		return ErrTicketMalformed
	}
	body, sigText := token[:dot], token[dot+1:]
	sig, err := b64.Decode(sigText)
	if err != nil {
		return ErrTicketMalformed
	}
	if !hmac.Equal(sig, s.mac(body)) {
		return ErrTicketSignature
	}
	payload, err := b64.Decode(body[len(s.prefix):])
	if err != nil || json.Unmarshal(payload, v) != nil {
		return ErrTicketMalformed
	}
	return nil
}

func (s signer) mac(body string) []byte { return s.appendMAC(nil, []byte(body)) }

// appendMAC appends the HMAC of body to dst.
func (s signer) appendMAC(dst, body []byte) []byte {
	m := s.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(body)
	dst = m.Sum(dst)
	s.macs.Put(m)
	return dst
}

package queue

import (
	"context"
	"log/slog"
	"net/mail"
	"strings"
)

// Being called: a waiting person may leave an email address (PUT
// /v1/events/{id}/notify) to be mailed a resume link when their turn comes
// while they are away (the call, Away), and once earlier when at most
// Away.NotifyAhead people are ahead of them. The address is kept only until
// its last mail is sent, its person's place ends (admitted, left, swept,
// lapsed) or the event is deleted, and is never logged: docs/api.md,
// "Being called", and docs/data.md, "Addresses".

// MaxAddressLen is the longest address taken (RFC 5321's path limit).
const MaxAddressLen = 254

// MaxUsersPerAddress is how many people of one event may leave the same
// address: a cap on one mailbox being made to receive the mails of a
// crowd (or a crowd's mails being sent to someone who did not ask).
const MaxUsersPerAddress = 3

// CheckAddress reports whether s is an address waitq mails: one plain
// address (no name, no comment, no angle brackets), printable ASCII without
// spaces, at most MaxAddressLen characters, with a local part and a domain.
// Line breaks are refused before anything else: they are how a header is
// injected. Errors carry CodeInvalidEmail and never repeat s.
func CheckAddress(s string) error {
	switch {
	case s == "":
		return Errorf(CodeInvalidEmail, "email is required")
	case strings.ContainsAny(s, "\r\n"):
		return Errorf(CodeInvalidEmail, "email must be one line")
	case len(s) > MaxAddressLen:
		return Errorf(CodeInvalidEmail, "email must be at most %d characters", MaxAddressLen)
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return Errorf(CodeInvalidEmail, "email must be printable ASCII without spaces")
		}
	}
	a, err := mail.ParseAddress(s)
	at := strings.LastIndexByte(s, '@')
	if err != nil || a.Name != "" || a.Address != s || at < 1 || at == len(s)-1 {
		return Errorf(CodeInvalidEmail, "email must be one plain address, such as name@domain")
	}
	return nil
}

// AddressKey is what counts as one address for MaxUsersPerAddress: s in
// lower case (most mailboxes ignore the case of the local part too).
func AddressKey(s string) string { return strings.ToLower(s) }

// MailKind is why a mail is sent.
type MailKind string

// The mails of being called.
const (
	// MailEarly: at most Away.NotifyAhead people are ahead (sent once).
	MailEarly MailKind = "early"
	// MailCall: the turn came while its person was away; it waits for
	// them until the end of the claim window.
	MailCall MailKind = "call"
)

// Mail is one mail due to a person who left an address. Its Address is
// never logged: LogValue leaves it out.
type Mail struct {
	EventID string
	UserID  string
	Address string
	Kind    MailKind
	// Place is the place's score (the line's, or the one a call left): the
	// resume link binds it (Resume.Place).
	Place int64
	// Ahead is how many people were ahead (MailEarly).
	Ahead int64
	// Until is the end of the claim window (MailCall, unix ms).
	Until int64
}

// LogValue implements slog.LogValuer: a mail as logs may show it, without
// its address.
func (m Mail) LogValue() slog.Value {
	return slog.GroupValue(slog.String("event", m.EventID), slog.String("kind", string(m.Kind)))
}

// AddressStore keeps the addresses people leave: what producer-api's
// notify route needs (implemented by redisstore.Store).
type AddressStore interface {
	// SetAddress keeps address (CheckAddress) for userID in eventID,
	// replacing one they left before. It fails with CodeNoPlace when they
	// neither wait nor are called, CodeEmailLimit when MaxUsersPerAddress
	// others of the event left it, ErrEventNotFound for an unknown event;
	// nothing changes then.
	SetAddress(ctx context.Context, eventID, userID, address string) error
	// RemoveAddress forgets userID's address in eventID and reports
	// whether there was one.
	RemoveAddress(ctx context.Context, eventID, userID string) (bool, error)
}

// MailStore finds the mails due: what the slot monitor needs.
type MailStore interface {
	// DueMails returns the mails due in eventIDs at nowMs, each once (the
	// store marks an early mail sent and forgets the address of a call),
	// and forgets some addresses whose people have no place any more.
	DueMails(ctx context.Context, eventIDs []string, nowMs int64) ([]Mail, error)
}

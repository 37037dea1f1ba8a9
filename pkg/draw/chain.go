package draw

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// A chain draw is a draw with a public random value (docs/api.md, "Ticket
// drops"): at the opening the pre-queue's entries are frozen and their
// Merkle root published; the operator then supplies the value of a public
// random source named before the pre-queue started; the draw's effective
// seed mixes the committed seed, the public value and the entry root
// (Mix), and each entry's number is Number(effective seed, entry bytes).

// MixLabel starts the message Mix authenticates, naming the rule's version.
const MixLabel = "waitq-draw-chain-v1"

// MaxPublicValueBytes bounds a public value (decoded).
const MaxPublicValueBytes = 256

// ParsePublicValue reads a public value written in hex: 1 to
// MaxPublicValueBytes bytes, an even number of hex digits.
func ParsePublicValue(h string) ([]byte, error) {
	b, err := hex.DecodeString(h)
	if err != nil || len(b) == 0 || len(b) > MaxPublicValueBytes {
		return nil, fmt.Errorf("draw: a public value is 2 to %d hex digits (an even number), not %.80q", 2*MaxPublicValueBytes, h)
	}
	return b, nil
}

// Mix returns a chain draw's effective seed:
//
//	HMAC-SHA256(key = seed, message = "waitq-draw-chain-v1" || 0x00 || entryRoot (32 bytes) || publicValue)
//
// Nobody knows it before the public value is drawn, which is after the
// entries were frozen; the seed's commitment keeps the operator from
// choosing the seed once the value is known.
func Mix(seed Seed, entryRoot [sha256.Size]byte, publicValue []byte) Seed {
	m := hmac.New(sha256.New, seed[:])
	m.Write([]byte(MixLabel))
	m.Write([]byte{0})
	m.Write(entryRoot[:])
	m.Write(publicValue)
	var out Seed
	m.Sum(out[:0])
	return out
}

// SaltKeySize is the length of an event's salt key.
const SaltKeySize = 32

// Salt is user's salt under an event's secret salt key:
// HMAC-SHA256(key = saltKey, message = userId). Only the user is given it
// (in their receipt); the key is never revealed.
func Salt(saltKey [SaltKeySize]byte, user string) [sha256.Size]byte {
	m := hmac.New(sha256.New, saltKey[:])
	m.Write([]byte(user))
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

// SaltedEntry is user's entry: sha256(salt || userId).
func SaltedEntry(salt [sha256.Size]byte, user string) Entry {
	return sha256.Sum256(append(salt[:], user...))
}

// UserEntry is user's entry under the event's salt key: SaltedEntry of
// user's Salt.
func UserEntry(saltKey [SaltKeySize]byte, user string) Entry {
	return SaltedEntry(Salt(saltKey, user), user)
}

// EntryNumber is e's draw number under the effective seed: the rule of
// Number with the entry's 32 bytes as the message.
func EntryNumber(d *Drawer, e Entry) uint64 { return d.Number(string(e[:])) }

// PublicSource names a chain draw's public random source before the
// pre-queue starts: a drand round, a lottery's draw, ...
type PublicSource struct {
	// Name says what the source is ("drand", "lotto 6/45 of Korea", ...).
	Name string `json:"name"`
	// Round is the source's round or draw number (0: none, see Ref).
	Round uint64 `json:"round,omitempty"`
	// Ref says where the value is read, in words or a URL.
	Ref string `json:"ref,omitempty"`
	// DeadlineSeconds is how long after the opening the operator has to
	// supply the value (0: DefaultDeadlineSeconds); past it the draw is
	// made without one (docs/api.md, "Ticket drops").
	DeadlineSeconds int `json:"deadlineSeconds,omitempty"`
}

// DefaultDeadlineSeconds is a public source's deadline when it names none,
// and MaxDeadlineSeconds the longest it may name.
const (
	DefaultDeadlineSeconds = 3600
	MaxDeadlineSeconds     = 86400
)

// Deadline returns p's deadline in seconds, the default for 0.
func (p PublicSource) Deadline() int {
	if p.DeadlineSeconds == 0 {
		return DefaultDeadlineSeconds
	}
	return p.DeadlineSeconds
}

// Check reports a source that names nothing or is too long.
func (p PublicSource) Check() error {
	switch {
	case strings.TrimSpace(p.Name) == "" || len(p.Name) > 128:
		return errors.New("draw.publicSource.name is 1 to 128 characters")
	case len(p.Ref) > 512:
		return errors.New("draw.publicSource.ref is at most 512 characters")
	case p.DeadlineSeconds < 0 || p.DeadlineSeconds > MaxDeadlineSeconds || (p.DeadlineSeconds > 0 && p.DeadlineSeconds < 60):
		return fmt.Errorf("draw.publicSource.deadlineSeconds is 60 to %d, or 0 for %d", MaxDeadlineSeconds, DefaultDeadlineSeconds)
	case p.Round == 0 && strings.TrimSpace(p.Ref) == "":
		return errors.New("draw.publicSource needs a round or a ref: which value of the source is drawn")
	}
	return nil
}

// place is the 1-based place of (n, e) among all (numbers[i], entries[i]):
// one more than the count of pairs smaller (by number, then entry bytes).
func place(n uint64, e Entry, numbers []uint64, entries []Entry) int {
	p := 1
	for i, m := range numbers {
		if m < n || (m == n && bytes.Compare(entries[i][:], e[:]) < 0) {
			p++
		}
	}
	return p
}

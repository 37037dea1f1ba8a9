// Package draw is the random order of a ticket drop's pre-queue, and the
// means to check it.
//
// When an event is scheduled, waitq draws a secret 32-byte seed and
// publishes only its commitment, the SHA-256 of the seed in hex. At the
// opening it reveals the seed. Every user who joined during the pre-queue
// takes the place given by their draw number:
//
//	n(u) = big-endian uint64 of the first 8 bytes of HMAC-SHA256(key = seed, message = u) >> 12
//
// (a 52-bit number), in ascending order of n, users with the same n in
// ascending byte order of their ids. Anyone holding the seed and the list of
// pre-queue user ids recomputes the whole order with Order, and checks a
// published order with Verify; nobody, the operator included, can choose the
// seed after seeing who joined, since its commitment was published first.
//
// The number has 52 bits so that Redis keeps it exactly as a sorted-set
// score (Score): the line in Redis sorts drawn users exactly as Order does.
//
// A chain draw (chain.go, merkle.go, receipt.go) adds to this a public
// random value and a receipt for every visitor: the pre-queue's salted
// entries are frozen under a Merkle root at the opening, the seed is mixed
// with the public value and the root (Mix), and each entry's number is
// taken under that effective seed (docs/api.md, "Ticket drops").
//
// The package has no dependencies beyond the standard library; its
// functions are safe for concurrent use.
package draw

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"
)

// SeedSize is the length of a seed in bytes.
const SeedSize = 32

// Seed is the secret of one draw. Its String method hides it, so that a
// seed printed by mistake is not revealed; Hex reveals it.
type Seed [SeedSize]byte

// NewSeed draws a seed from crypto/rand.
func NewSeed() (Seed, error) {
	var s Seed
	if _, err := rand.Read(s[:]); err != nil {
		return Seed{}, fmt.Errorf("draw: new seed: %w", err)
	}
	return s, nil
}

// ParseSeed reads a seed written as 64 hex digits.
func ParseSeed(h string) (Seed, error) {
	var s Seed
	b, err := hex.DecodeString(strings.TrimSpace(h))
	if err != nil || len(b) != SeedSize {
		return Seed{}, errors.New("draw: a seed is 64 hex digits")
	}
	copy(s[:], b)
	return s, nil
}

// Hex returns the seed as 64 lower-case hex digits: revealing it.
func (s Seed) Hex() string { return hex.EncodeToString(s[:]) }

// String hides the seed.
func (s Seed) String() string { return "draw.Seed(hidden)" }

// Commitment is the seed's published commitment: SHA-256 of its 32 bytes,
// in lower-case hex.
func (s Seed) Commitment() string {
	sum := sha256.Sum256(s[:])
	return hex.EncodeToString(sum[:])
}

// Bits is the width of a draw number.
const Bits = 52

// Number is user's draw number under seed (see the package comment).
func Number(seed Seed, user string) uint64 { return NewDrawer(seed).Number(user) }

// Score is user's place in the line as a Redis sorted-set score: the draw
// number minus 2^52, a negative integer a float64 holds exactly, so every
// drawn user stands before every join stamped after the opening (stamps are
// positive unix milliseconds).
func Score(seed Seed, user string) int64 { return NewDrawer(seed).Score(user) }

// Drawer computes the numbers of many users under one seed, reusing one
// HMAC; it is not safe for concurrent use.
type Drawer struct {
	m   hash.Hash
	sum [sha256.Size]byte
}

// NewDrawer returns a Drawer under seed.
func NewDrawer(seed Seed) *Drawer { return &Drawer{m: hmac.New(sha256.New, seed[:])} }

// Number is user's draw number.
func (d *Drawer) Number(user string) uint64 {
	d.m.Reset()
	io.WriteString(d.m, user)
	return binary.BigEndian.Uint64(d.m.Sum(d.sum[:0])[:8]) >> (64 - Bits)
}

// Score is user's score (see Score).
func (d *Drawer) Score(user string) int64 { return int64(d.Number(user)) - 1<<Bits }

// Order returns users in their drawn order. Repeated ids count once.
func Order(seed Seed, users []string) []string {
	type drawn struct {
		n    uint64
		user string
	}
	ds := make([]drawn, 0, len(users))
	d := NewDrawer(seed)
	for _, u := range users {
		ds = append(ds, drawn{d.Number(u), u})
	}
	slices.SortFunc(ds, func(a, b drawn) int {
		if a.n != b.n {
			if a.n < b.n {
				return -1
			}
			return 1
		}
		return strings.Compare(a.user, b.user)
	})
	out := make([]string, 0, len(ds))
	for i, d := range ds {
		if i > 0 && d.user == ds[i-1].user {
			continue
		}
		out = append(out, d.user)
	}
	return out
}

// Mismatch says where a claimed order departs from the drawn one.
type Mismatch struct {
	Place   int    // 1-based
	Claimed string // the user the claimed order puts there ("" past its end)
	Drawn   string // the user the draw puts there ("" past its end)
}

// Error implements error.
func (m *Mismatch) Error() string {
	return fmt.Sprintf("draw: place %d is %q in the claimed order but %q in the draw", m.Place, m.Claimed, m.Drawn)
}

// ErrCommitment is returned by Verify when the seed does not match the
// commitment published before the opening.
var ErrCommitment = errors.New("draw: the seed does not match the commitment")

// Verify checks a published draw: that seed matches commitment, and that
// claimed is exactly the order of users under seed. It returns nil,
// ErrCommitment, or a *Mismatch naming the first place that differs.
func Verify(seed Seed, commitment string, users, claimed []string) error {
	if !strings.EqualFold(seed.Commitment(), strings.TrimSpace(commitment)) {
		return ErrCommitment
	}
	want := Order(seed, users)
	for i := range max(len(want), len(claimed)) {
		var c, w string
		if i < len(claimed) {
			c = claimed[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if c != w {
			return &Mismatch{Place: i + 1, Claimed: c, Drawn: w}
		}
	}
	return nil
}

// Export is a draw as the admin API exports it after the opening, and as
// the verify command reads it.
type Export struct {
	EventID    string `json:"eventId"`
	OpensAt    int64  `json:"opensAt"` // unix ms
	Commitment string `json:"commitment"`
	Seed       string `json:"seed"` // hex
	// Users are the pre-queue's user ids, sorted by id.
	Users []string `json:"users"`
	// Order is the line's drawn order, as the service holds it.
	Order []string `json:"order"`
}

// Verify checks x with the package's Verify.
func (x *Export) Verify() error {
	seed, err := ParseSeed(x.Seed)
	if err != nil {
		return err
	}
	return Verify(seed, x.Commitment, x.Users, x.Order)
}

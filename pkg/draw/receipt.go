package draw

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Chain is a chain draw's public data, as GET /v1/events/{eventId}/draw
// serves it once the public value is supplied, and as the verifiers read
// it.
type Chain struct {
	EventID      string        `json:"eventId"`
	OpensAt      int64         `json:"opensAt"` // unix ms
	Commitment   string        `json:"commitment"`
	Seed         string        `json:"seed"` // hex
	PublicSource *PublicSource `json:"publicSource"`
	PublicValue  string        `json:"publicValue"` // hex
	// PublicValueMissed says the operator supplied no value by the
	// source's deadline: the draw was made with an empty one.
	PublicValueMissed bool   `json:"publicValueMissed,omitempty"`
	EntryRoot         string `json:"entryRoot"` // hex
	EntryCount        int    `json:"entryCount"`
	// Entries are the frozen entries in ascending order (the leaves').
	Entries []string `json:"entries"`
	// Numbers are the entries' draw numbers, in the order of Entries.
	Numbers []uint64 `json:"numbers"`
	// Order is the entries in the order the line holds them.
	Order []string `json:"order"`
}

// Receipt is one visitor's proof that they were drawn: their salt (known
// to them alone), their entry with its Merkle path, their number and place.
type Receipt struct {
	EventID   string `json:"eventId"`
	UserID    string `json:"userId"`
	Salt      string `json:"salt"`  // hex
	Entry     string `json:"entry"` // hex
	Path      []Step `json:"path"`
	EntryRoot string `json:"entryRoot"`
	Number    uint64 `json:"number"`
	Place     int    `json:"place"`
}

// Errors of a chain's or a receipt's check; a departing order is a
// *Mismatch whose users are entries.
var (
	ErrEntryRoot  = errors.New("draw: the published entries do not hash to the published entry root")
	ErrNumbers    = errors.New("draw: a published draw number is not the entry's number under the effective seed")
	ErrOtherEvent = errors.New("draw: the receipt is of another event")
	ErrSalt       = errors.New("draw: the receipt's entry is not sha256(salt || userId)")
	ErrReceipt    = errors.New("draw: the receipt's number or place is not the draw's")
)

// entries parses c's entries, checking their order, count and root.
func (c *Chain) entries() ([]Entry, [sha256.Size]byte, error) {
	var root [sha256.Size]byte
	es := make([]Entry, len(c.Entries))
	for i, h := range c.Entries {
		e, err := ParseEntry(h)
		if err != nil {
			return nil, root, err
		}
		es[i] = e
	}
	if !slices.IsSortedFunc(es, func(a, b Entry) int { return bytes.Compare(a[:], b[:]) }) {
		return nil, root, errors.New("draw: the published entries are not in ascending order")
	}
	if err := SortEntries(slices.Clone(es)); err != nil {
		return nil, root, err
	}
	if len(es) != c.EntryCount || len(c.Numbers) != len(es) {
		return nil, root, fmt.Errorf("draw: %d entries and %d numbers published for an entry count of %d", len(es), len(c.Numbers), c.EntryCount)
	}
	if NewTree(c.EventID, es).Root() != c.EntryRoot {
		return nil, root, ErrEntryRoot
	}
	b, _ := hex.DecodeString(c.EntryRoot)
	copy(root[:], b)
	return es, root, nil
}

// effective returns c's effective seed (Mix), checking the seed against
// the commitment on the way.
func (c *Chain) effective(root [sha256.Size]byte) (Seed, error) {
	seed, err := ParseSeed(c.Seed)
	if err != nil {
		return Seed{}, err
	}
	if !strings.EqualFold(seed.Commitment(), strings.TrimSpace(c.Commitment)) {
		return Seed{}, ErrCommitment
	}
	if c.PublicValueMissed && c.PublicValue == "" {
		return Mix(seed, root, nil), nil
	}
	pv, err := ParsePublicValue(c.PublicValue)
	if err != nil {
		return Seed{}, err
	}
	return Mix(seed, root, pv), nil
}

// drawer checks c's entries and seed (entries, effective) and returns the
// entries with the drawer of the effective seed, what Verify and
// VerifyReceipt both number entries with.
func (c *Chain) drawer() ([]Entry, *Drawer, error) {
	es, root, err := c.entries()
	if err != nil {
		return nil, nil, err
	}
	eff, err := c.effective(root)
	if err != nil {
		return nil, nil, err
	}
	return es, NewDrawer(eff), nil
}

// Verify checks the whole chain: the seed matches the commitment, the
// entries hash to the root, every number is the entry's under the seed
// mixed with the public value and the root, and the line's order is the
// numbers' (ascending, equal numbers by entry bytes).
func (c *Chain) Verify() error {
	es, d, err := c.drawer()
	if err != nil {
		return err
	}
	for i, e := range es {
		if EntryNumber(d, e) != c.Numbers[i] {
			return fmt.Errorf("%w (entry %s)", ErrNumbers, e.Hex())
		}
	}
	want := OrderEntries(es, c.Numbers)
	for i := range max(len(want), len(c.Order)) {
		var got, w string
		if i < len(c.Order) {
			got = c.Order[i]
		}
		if i < len(want) {
			w = want[i].Hex()
		}
		if got != w {
			return &Mismatch{Place: i + 1, Claimed: got, Drawn: w}
		}
	}
	return nil
}

// OrderEntries returns entries by ascending number (numbers[i] is
// entries[i]'s), equal numbers by entry bytes.
func OrderEntries(entries []Entry, numbers []uint64) []Entry {
	idx := make([]int, len(entries))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if numbers[a] != numbers[b] {
			if numbers[a] < numbers[b] {
				return -1
			}
			return 1
		}
		return bytes.Compare(entries[a][:], entries[b][:])
	})
	out := make([]Entry, len(idx))
	for i, j := range idx {
		out[i] = entries[j]
	}
	return out
}

// VerifyReceipt checks r against the chain c: of c's event, the entry is
// the salted user id, its path leads to c's root, and its number and place
// are the draw's. It does not check c itself (Verify does).
func VerifyReceipt(c *Chain, r *Receipt) error {
	if r.EventID != c.EventID {
		return fmt.Errorf("%w: %q, not %q", ErrOtherEvent, r.EventID, c.EventID)
	}
	salt, err := hex.DecodeString(r.Salt)
	if err != nil || len(salt) != sha256.Size {
		return errors.New("draw: a receipt's salt is 64 hex digits")
	}
	e := SaltedEntry([sha256.Size]byte(salt), r.UserID)
	if e.Hex() != r.Entry {
		return ErrSalt
	}
	if err := VerifyPath(c.EventID, e, r.Path, c.EntryRoot); err != nil {
		return err
	}
	es, d, err := c.drawer()
	if err != nil {
		return err
	}
	n := EntryNumber(d, e)
	i := slices.IndexFunc(es, func(x Entry) bool { return x == e })
	if i < 0 || c.Numbers[i] != n || r.Number != n || r.Place != place(n, e, c.Numbers, es) {
		return ErrReceipt
	}
	return nil
}

// BuildChain computes eventID's chain draw from its secrets: the seed, the
// public value (nil: missed, past the deadline) and the frozen entries (in
// any order). It returns the
// chain, without Order (the line's, for the service to fill), and the
// entries' tree for receipts.
func BuildChain(eventID string, opensAt int64, seed Seed, src *PublicSource, publicValue []byte, entries []Entry) (*Chain, *Tree, error) {
	es, t, err := EntryTree(eventID, entries)
	if err != nil {
		return nil, nil, err
	}
	c := &Chain{
		EventID: eventID, OpensAt: opensAt, Commitment: seed.Commitment(), Seed: seed.Hex(),
		PublicSource: src, PublicValue: hex.EncodeToString(publicValue), PublicValueMissed: len(publicValue) == 0,
		EntryRoot: t.Root(), EntryCount: len(es), Entries: make([]string, len(es)), Numbers: make([]uint64, len(es)),
	}
	var root [sha256.Size]byte
	b, _ := hex.DecodeString(c.EntryRoot)
	copy(root[:], b)
	d := NewDrawer(Mix(seed, root, publicValue))
	for i, e := range es {
		c.Entries[i], c.Numbers[i] = e.Hex(), EntryNumber(d, e)
	}
	return c, t, nil
}

// Receipt returns user's receipt in c, whose tree is t, under the event's
// salt key; false when the user's entry is not among c's.
func (c *Chain) Receipt(t *Tree, saltKey [SaltKeySize]byte, user string) (*Receipt, bool) {
	salt := Salt(saltKey, user)
	e := SaltedEntry(salt, user)
	i, found := slices.BinarySearch(c.Entries, e.Hex())
	if !found {
		return nil, false
	}
	es := make([]Entry, len(c.Entries))
	for j, h := range c.Entries {
		es[j], _ = ParseEntry(h)
	}
	return &Receipt{
		EventID: c.EventID, UserID: user, Salt: hex.EncodeToString(salt[:]), Entry: e.Hex(), Path: t.Path(i),
		EntryRoot: c.EntryRoot, Number: c.Numbers[i], Place: place(c.Numbers[i], e, c.Numbers, es),
	}, true
}

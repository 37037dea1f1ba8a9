package draw

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
)

// Entry is one pre-queue visitor as a chain draw publishes them: the
// SHA-256 of their salt and user id (SaltedEntry), which says nothing of who
// they are to anyone without the salt.
type Entry [sha256.Size]byte

// Hex returns e as 64 lower-case hex digits.
func (e Entry) Hex() string { return hex.EncodeToString(e[:]) }

// ParseEntry reads an entry written as 64 hex digits.
func ParseEntry(h string) (Entry, error) {
	var e Entry
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != len(e) {
		return Entry{}, fmt.Errorf("draw: an entry is 64 hex digits, not %q", h)
	}
	copy(e[:], b)
	return e, nil
}

// Leaf is entry's leaf in eventID's entry tree:
//
//	sha256(0x00 || eventId || 0x00 || entry)
//
// The event id in the leaf makes a path of one event's tree useless in
// another's.
func Leaf(eventID string, e Entry) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write([]byte(eventID))
	h.Write([]byte{0})
	h.Write(e[:])
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// node is an interior node: sha256(0x01 || left || right).
func node(l, r [sha256.Size]byte) [sha256.Size]byte {
	var b [1 + 2*sha256.Size]byte
	b[0] = 1
	copy(b[1:], l[:])
	copy(b[1+sha256.Size:], r[:])
	return sha256.Sum256(b[:])
}

// EmptyRoot is the root of an event's tree with no entries:
// sha256(0x02 || eventId).
func EmptyRoot(eventID string) [sha256.Size]byte {
	return sha256.Sum256(append([]byte{2}, eventID...))
}

// Step is one step of a Merkle path: the sibling's hash and its side.
type Step struct {
	// Side is "left" when the sibling is the left child, "right" when the
	// right.
	Side string `json:"side"`
	Hash string `json:"hash"` // hex
}

// SortEntries sorts entries in ascending byte order, the leaves' order, and
// reports an entry listed twice as an error.
func SortEntries(entries []Entry) error {
	slices.SortFunc(entries, func(a, b Entry) int { return bytes.Compare(a[:], b[:]) })
	for i := 1; i < len(entries); i++ {
		if entries[i] == entries[i-1] {
			return fmt.Errorf("draw: entry %s is listed twice", entries[i].Hex())
		}
	}
	return nil
}

// EntryTree sorts a copy of entries (in any order; one listed twice is an
// error) and builds eventID's tree over it: the one rule by which a
// freeze, a rebuild's check and a made draw find the entry root.
func EntryTree(eventID string, entries []Entry) ([]Entry, *Tree, error) {
	es := slices.Clone(entries)
	if err := SortEntries(es); err != nil {
		return nil, nil, err
	}
	return es, NewTree(eventID, es), nil
}

// Tree is the Merkle tree of one event's frozen entries, leaves in
// ascending entry order. A level's last node without a sibling is promoted
// to the next level unchanged (never paired with itself).
type Tree struct {
	levels [][][sha256.Size]byte // levels[0] the leaves, the last the root
}

// NewTree builds eventID's tree over entries, which must be sorted and
// unique (SortEntries).
func NewTree(eventID string, entries []Entry) *Tree {
	leaves := make([][sha256.Size]byte, len(entries))
	for i, e := range entries {
		leaves[i] = Leaf(eventID, e)
	}
	t := &Tree{levels: [][][sha256.Size]byte{leaves}}
	for lv := leaves; len(lv) > 1; {
		next := make([][sha256.Size]byte, 0, (len(lv)+1)/2)
		for i := 0; i < len(lv); i += 2 {
			if i+1 == len(lv) {
				next = append(next, lv[i])
				continue
			}
			next = append(next, node(lv[i], lv[i+1]))
		}
		t.levels = append(t.levels, next)
		lv = next
	}
	if len(leaves) == 0 {
		t.levels = append(t.levels, [][sha256.Size]byte{EmptyRoot(eventID)})
	}
	return t
}

// Root returns the tree's root in hex.
func (t *Tree) Root() string {
	top := t.levels[len(t.levels)-1]
	return hex.EncodeToString(top[0][:])
}

// Path returns the path from leaf i to the root, bottom up.
func (t *Tree) Path(i int) []Step {
	var path []Step
	for _, lv := range t.levels[:len(t.levels)-1] {
		sib := i ^ 1
		if sib < len(lv) {
			side := "right"
			if sib < i {
				side = "left"
			}
			path = append(path, Step{Side: side, Hash: hex.EncodeToString(lv[sib][:])})
		}
		i /= 2
	}
	return path
}

// ErrPath is returned when a Merkle path does not lead from an entry to the
// published root.
var ErrPath = errors.New("draw: the entry's Merkle path does not lead to the published entry root (a forged receipt, or one of another event)")

// VerifyPath checks that path leads from entry's leaf in eventID's tree to
// root (hex).
func VerifyPath(eventID string, e Entry, path []Step, root string) error {
	h := Leaf(eventID, e)
	for _, s := range path {
		b, err := hex.DecodeString(s.Hash)
		if err != nil || len(b) != sha256.Size {
			return fmt.Errorf("draw: a path step's hash is 64 hex digits, not %q", s.Hash)
		}
		var sib [sha256.Size]byte
		copy(sib[:], b)
		switch s.Side {
		case "left":
			h = node(sib, h)
		case "right":
			h = node(h, sib)
		default:
			return fmt.Errorf("draw: a path step's side is left or right, not %q", s.Side)
		}
	}
	if hex.EncodeToString(h[:]) != root {
		return ErrPath
	}
	return nil
}

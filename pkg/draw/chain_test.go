package draw

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"
)

func testEntries(n int) []Entry {
	es := make([]Entry, n)
	for i := range es {
		es[i] = sha256.Sum256(fmt.Appendf(nil, "entry %d", i))
	}
	SortEntries(es)
	return es
}

// rootByHand computes the root level by level from the rule's words.
func rootByHand(ev string, es []Entry) string {
	if len(es) == 0 {
		r := sha256.Sum256(append([]byte{2}, ev...))
		return hex.EncodeToString(r[:])
	}
	var lv [][]byte
	for _, e := range es {
		l := sha256.Sum256(slices.Concat([]byte{0}, []byte(ev), []byte{0}, e[:]))
		lv = append(lv, l[:])
	}
	for len(lv) > 1 {
		var next [][]byte
		for i := 0; i < len(lv); i += 2 {
			if i+1 < len(lv) {
				h := sha256.Sum256(slices.Concat([]byte{1}, lv[i], lv[i+1]))
				next = append(next, h[:])
			} else {
				next = append(next, lv[i])
			}
		}
		lv = next
	}
	return hex.EncodeToString(lv[0])
}

func TestTreePathsForEveryIndex(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 33, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			es := testEntries(n)
			tr := NewTree("drop", es)
			if got, want := tr.Root(), rootByHand("drop", es); got != want {
				t.Fatalf("root %s, by hand %s", got, want)
			}
			for i, e := range es {
				p := tr.Path(i)
				if err := VerifyPath("drop", e, p, tr.Root()); err != nil {
					t.Fatalf("path of %d: %v", i, err)
				}
				if err := VerifyPath("other", e, p, tr.Root()); !errors.Is(err, ErrPath) {
					t.Fatalf("path of %d for another event: %v", i, err)
				}
				if len(p) > 0 {
					bad := slices.Clone(p)
					bad[0].Hash = es[(i+1)%n].Hex()
					if err := VerifyPath("drop", e, bad, tr.Root()); !errors.Is(err, ErrPath) {
						t.Fatalf("tampered path of %d: %v", i, err)
					}
					bad = slices.Clone(p)
					bad[0].Side = map[string]string{"left": "right", "right": "left"}[bad[0].Side]
					if err := VerifyPath("drop", e, bad, tr.Root()); !errors.Is(err, ErrPath) {
						t.Fatalf("path of %d with a side swapped: %v", i, err)
					}
				}
			}
		})
	}
}

func TestRootChangesWithAnEntryAdded(t *testing.T) {
	es := testEntries(10)
	frozen := NewTree("drop", es).Root()
	more := append(slices.Clone(es), sha256.Sum256([]byte("late")))
	if err := SortEntries(more); err != nil {
		t.Fatal(err)
	}
	if NewTree("drop", more).Root() == frozen {
		t.Fatal("an entry added after the freeze left the root as it was")
	}
	dup := append(slices.Clone(es), es[3])
	if err := SortEntries(dup); err == nil {
		t.Fatal("an entry listed twice was taken")
	}
}

func TestMixIsTheHMACOfTheRule(t *testing.T) {
	seed := testSeed(t)
	root := sha256.Sum256([]byte("root"))
	pv := []byte{0xde, 0xad}
	m := hmac.New(sha256.New, seed[:])
	m.Write(slices.Concat([]byte("waitq-draw-chain-v1"), []byte{0}, root[:], pv))
	if got := Mix(seed, root, pv); hex.EncodeToString(got[:]) != hex.EncodeToString(m.Sum(nil)) {
		t.Fatal("Mix is not HMAC-SHA256(seed, label || 0 || root || value)")
	}
	if Mix(seed, root, []byte{0xde, 0xae}) == Mix(seed, root, pv) || Mix(seed, sha256.Sum256(nil), pv) == Mix(seed, root, pv) {
		t.Fatal("the effective seed ignores the public value or the root")
	}
}

func TestParsePublicValue(t *testing.T) {
	for _, bad := range []string{"", "a", "zz", "0x12", string(make([]byte, 514))} {
		if _, err := ParsePublicValue(bad); err == nil {
			t.Errorf("%.10q taken", bad)
		}
	}
	if b, err := ParsePublicValue("00ff"); err != nil || len(b) != 2 {
		t.Fatal(b, err)
	}
}

// testChain draws n users of event ev.
func testChain(t *testing.T, ev string, n int) (*Chain, *Tree, [SaltKeySize]byte, []string) {
	t.Helper()
	key := [SaltKeySize]byte{7}
	var users []string
	var es []Entry
	for i := range n {
		u := fmt.Sprintf("u%04d", i)
		users = append(users, u)
		es = append(es, SaltedEntry(Salt(key, u), u))
	}
	c, tr, err := BuildChain(ev, 1, testSeed(t), &PublicSource{Name: "drand", Round: 5}, []byte{1, 2, 3}, es)
	if err != nil {
		t.Fatal(err)
	}
	sorted := make([]Entry, len(c.Entries))
	for i, h := range c.Entries {
		sorted[i], _ = ParseEntry(h)
	}
	for _, e := range OrderEntries(sorted, c.Numbers) {
		c.Order = append(c.Order, e.Hex())
	}
	return c, tr, key, users
}

func TestChainVerifies(t *testing.T) {
	c, _, _, _ := testChain(t, "drop", 101)
	if err := c.Verify(); err != nil {
		t.Fatal(err)
	}
	tamper := map[string]func(c *Chain) error{
		"order":        func(c *Chain) error { c.Order[3], c.Order[4] = c.Order[4], c.Order[3]; return &Mismatch{} },
		"number":       func(c *Chain) error { c.Numbers[7]++; return ErrNumbers },
		"public value": func(c *Chain) error { c.PublicValue = "010204"; return ErrNumbers },
		"commitment":   func(c *Chain) error { c.Commitment = c.EntryRoot; return ErrCommitment },
		"root":         func(c *Chain) error { c.EntryRoot = c.Commitment; return ErrEntryRoot },
		"entry":        func(c *Chain) error { c.Entries[0] = "00" + c.Entries[0][2:]; return ErrEntryRoot },
	}
	for name, f := range tamper {
		t.Run(name, func(t *testing.T) {
			c, _, _, _ := testChain(t, "drop", 101)
			want := f(c)
			err := c.Verify()
			var mm *Mismatch
			if err == nil || (!errors.Is(err, want) && !(errors.As(want, &mm) && errors.As(err, &mm))) {
				t.Fatalf("tampered %s: %v, want %v", name, err, want)
			}
		})
	}
}

func TestReceipts(t *testing.T) {
	c, tr, key, users := testChain(t, "drop", 37)
	places := map[int]bool{}
	for _, u := range users {
		r, ok := c.Receipt(tr, key, u)
		if !ok {
			t.Fatalf("no receipt for %s", u)
		}
		if err := VerifyReceipt(c, r); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if c.Order[r.Place-1] != r.Entry {
			t.Fatalf("%s: place %d is not their place in the order", u, r.Place)
		}
		places[r.Place] = true
	}
	if len(places) != len(users) {
		t.Fatalf("%d distinct places for %d users", len(places), len(users))
	}
	if _, ok := c.Receipt(tr, key, "stranger"); ok {
		t.Fatal("a receipt for someone who never joined")
	}
	other, otr, _, _ := testChain(t, "other", 37)
	foreign, _ := other.Receipt(otr, key, users[0])
	r, _ := c.Receipt(tr, key, users[0])
	forge := map[string]func(r *Receipt) error{
		"another event's": func(r *Receipt) error { *r = *foreign; return ErrOtherEvent },
		"another event's path": func(r *Receipt) error {
			r.Path = foreign.Path
			return ErrPath
		},
		"salt":   func(r *Receipt) error { r.Salt = r.Entry; return ErrSalt },
		"user":   func(r *Receipt) error { r.UserID = users[1]; return ErrSalt },
		"number": func(r *Receipt) error { r.Number++; return ErrReceipt },
		"place":  func(r *Receipt) error { r.Place = r.Place%37 + 1; return ErrReceipt },
	}
	for name, f := range forge {
		t.Run(name, func(t *testing.T) {
			bad := *r
			want := f(&bad)
			if err := VerifyReceipt(c, &bad); !errors.Is(err, want) {
				t.Fatalf("forged %s: %v, want %v", name, err, want)
			}
		})
	}
}

package draw

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"testing"
)

func testSeed(t *testing.T) Seed {
	t.Helper()
	s, err := ParseSeed("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// numberByHand computes the draw number another way: the HMAC's first 52
// bits read through math/big from its hex.
func numberByHand(seed Seed, user string) *big.Int {
	m := hmac.New(sha256.New, seed[:])
	m.Write([]byte(user))
	n, _ := new(big.Int).SetString(hex.EncodeToString(m.Sum(nil))[:13], 16) // 13 hex digits = 52 bits
	return n
}

func TestNumberIsTheFirst52BitsOfTheHMAC(t *testing.T) {
	seed := testSeed(t)
	for _, u := range []string{"alice", "bob", "u-0001", "", "x@y.example"} {
		if got, want := Number(seed, u), numberByHand(seed, u); got != want.Uint64() {
			t.Errorf("Number(%q) = %d, want %d", u, got, want)
		}
		if s := Score(seed, u); s >= 0 || s < -(1<<52) || float64(s) != float64(int64(float64(s))) {
			t.Errorf("Score(%q) = %d: not a negative integer a float64 holds exactly", u, s)
		}
	}
}

func TestOrderIsAscendingNumberThenID(t *testing.T) {
	seed := testSeed(t)
	var users []string
	for i := range 500 {
		users = append(users, fmt.Sprintf("user-%03d", i))
	}
	got := Order(seed, append(users, "user-007", "user-123")) // repeats count once
	want := append([]string(nil), users...)
	sort.Slice(want, func(i, j int) bool {
		a, b := numberByHand(seed, want[i]), numberByHand(seed, want[j])
		if c := a.Cmp(b); c != 0 {
			return c < 0
		}
		return want[i] < want[j]
	})
	if len(got) != len(want) {
		t.Fatalf("order has %d users, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("place %d: %s, want %s", i+1, got[i], want[i])
		}
	}
	if Order(seed, nil) == nil || len(Order(seed, nil)) != 0 {
		t.Error("the order of nobody is empty")
	}
}

func TestVerify(t *testing.T) {
	seed := testSeed(t)
	users := []string{"a", "b", "c", "d", "e", "f"}
	order := Order(seed, users)
	if err := Verify(seed, seed.Commitment(), users, order); err != nil {
		t.Fatalf("the drawn order does not verify: %v", err)
	}
	swapped := append([]string(nil), order...)
	swapped[2], swapped[3] = swapped[3], swapped[2]
	var m *Mismatch
	if err := Verify(seed, seed.Commitment(), users, swapped); !errors.As(err, &m) || m.Place != 3 || m.Claimed != order[3] || m.Drawn != order[2] {
		t.Errorf("one swapped pair: got %v, want a mismatch at place 3", err)
	}
	if err := Verify(seed, seed.Commitment(), users, order[:5]); !errors.As(err, &m) || m.Place != 6 || m.Claimed != "" {
		t.Errorf("a short order: got %v, want a mismatch at place 6", err)
	}
	other := seed
	other[0] ^= 1
	if err := Verify(other, seed.Commitment(), users, order); !errors.Is(err, ErrCommitment) {
		t.Errorf("another seed: got %v, want ErrCommitment", err)
	}
	x := Export{Seed: seed.Hex(), Commitment: seed.Commitment(), Users: users, Order: order}
	if err := x.Verify(); err != nil {
		t.Errorf("export: %v", err)
	}
	x.Seed = "zz"
	if err := x.Verify(); err == nil {
		t.Error("a malformed seed verified")
	}
}

func TestSeed(t *testing.T) {
	a, err := NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSeed()
	if a == b {
		t.Error("two seeds are equal")
	}
	if fmt.Sprint(a) == a.Hex() || fmt.Sprintf("%v %+v %s", a, a, a) != "draw.Seed(hidden) draw.Seed(hidden) draw.Seed(hidden)" {
		t.Errorf("printing a seed reveals it: %v", a)
	}
	sum := sha256.Sum256(a[:])
	if a.Commitment() != hex.EncodeToString(sum[:]) {
		t.Error("the commitment is not sha256 of the seed")
	}
	if p, err := ParseSeed(a.Hex()); err != nil || p != a {
		t.Errorf("ParseSeed(Hex) = %v, %v", p, err)
	}
	for _, bad := range []string{"", "00", a.Hex() + "00", "g" + a.Hex()[1:]} {
		if _, err := ParseSeed(bad); err == nil {
			t.Errorf("ParseSeed(%q) accepted", bad)
		}
	}
}

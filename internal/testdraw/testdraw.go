// Package testdraw recomputes a drop's drawn order for tests, written apart
// from package draw (from the rule docs/data.md states) so that a test
// comparing the line with it checks the service against the documented
// rule, not against its own code.
package testdraw

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"testing"
)

// Order returns users in the order the documented rule gives under the seed
// seedHex: ascending first 52 bits of HMAC-SHA256(seed, user), compared as
// big-endian bytes, then ascending user id bytes.
func Order(tb testing.TB, seedHex string, users []string) []string {
	tb.Helper()
	seed, err := hex.DecodeString(seedHex)
	if err != nil || len(seed) != 32 {
		tb.Fatalf("testdraw: seed %q is not 64 hex digits", seedHex)
	}
	type drawn struct {
		key  []byte // the first 52 bits, the last 4 of the 7th byte cleared
		user string
	}
	ds := make([]drawn, len(users))
	for i, u := range users {
		m := hmac.New(sha256.New, seed)
		m.Write([]byte(u))
		k := m.Sum(nil)[:7]
		k[6] &= 0xf0
		ds[i] = drawn{k, u}
	}
	sort.Slice(ds, func(i, j int) bool {
		if c := bytes.Compare(ds[i].key, ds[j].key); c != 0 {
			return c < 0
		}
		return ds[i].user < ds[j].user
	})
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.user
	}
	return out
}

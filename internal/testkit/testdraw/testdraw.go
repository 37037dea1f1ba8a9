// Package testdraw recomputes a drop's drawn order for tests, written apart
// from package draw (from the rule docs/data.md states) so that a test
// comparing the line with it checks the service against the documented
// rule, not against its own code.
package testdraw

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"testing"
)

// Score returns the line score the documented rule gives user under the
// seed seedHex (64 hex digits): n − 2^52, where n is the first 52 bits of
// HMAC-SHA256(seed, user) read big-endian.
func Score(seedHex, user string) (int64, error) {
	seed, err := hex.DecodeString(seedHex)
	if err != nil || len(seed) != 32 {
		return 0, fmt.Errorf("testdraw: seed %q is not 64 hex digits", seedHex)
	}
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(user))
	n := binary.BigEndian.Uint64(m.Sum(nil)[:8]) >> 12
	return int64(n) - 1<<52, nil
}

// Order returns users in the order the documented rule gives under the seed
// seedHex: ascending score, then ascending user id bytes.
func Order(tb testing.TB, seedHex string, users []string) []string {
	tb.Helper()
	type drawn struct {
		score int64
		user  string
	}
	ds := make([]drawn, len(users))
	for i, u := range users {
		s, err := Score(seedHex, u)
		if err != nil {
			tb.Fatal(err)
		}
		ds[i] = drawn{s, u}
	}
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].score != ds[j].score {
			return ds[i].score < ds[j].score
		}
		return ds[i].user < ds[j].user
	})
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.user
	}
	return out
}

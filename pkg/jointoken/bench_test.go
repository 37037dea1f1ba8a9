package jointoken_test

import (
	"testing"

	"github.com/waitq/waitq/pkg/jointoken"
)

// BenchmarkVerify verifies one token per algorithm with two keys
// registered (a rotation's overlap).
func BenchmarkVerify(b *testing.B) {
	hsK := mustKey(b)(jointoken.HMACKey("hs", secret(0)))
	edK := mustKey(b)(jointoken.Ed25519SigningKey("ed", edKey(1)))
	keys := []jointoken.Key{hsK, edK}
	for _, k := range keys {
		tok := mustMint(b, k, claims())
		b.Run(k.Alg, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jointoken.Verify(tok, keys, "e1", now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMint mints one token per algorithm.
func BenchmarkMint(b *testing.B) {
	for _, k := range []jointoken.Key{mustKey(b)(jointoken.HMACKey("hs", secret(0))), mustKey(b)(jointoken.Ed25519SigningKey("ed", edKey(1)))} {
		b.Run(k.Alg, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mustMint(b, k, claims())
			}
		})
	}
}

package challenge_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/challenge"
)

// BenchmarkVerify measures producer-api's cost of a solved challenge (goal:
// at most 20 µs, allocating only the challenge's ID), with a rotated key
// list and ids of realistic length.
func BenchmarkVerify(b *testing.B) {
	iss := mustIssuer(b, &clock{t0}, keyA, keyB)
	const ev, sub = "sale-2026-11-27", "visitor-7f3a9c2e-41d8-4b9e-a0f1-3c5d7e9b2a64"
	c := mustIssue(b, iss, ev, sub, 16)
	sol := mustSolve(b, c.Token)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iss.Verify(c.Token, sol, ev, sub, 16); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyForged measures the refusal of a token with a wrong MAC
// under the right key id, the cheapest thing an attacker can send.
func BenchmarkVerifyForged(b *testing.B) {
	iss := mustIssuer(b, &clock{t0}, keyA)
	c := mustIssue(b, iss, "e1", "u1", 16)
	forged := c.Token[:len(c.Token)-22] + "AAAAAAAAAAAAAAAAAAAAAA"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iss.Verify(forged, "1", "e1", "u1", 16); err == nil {
			b.Fatal("forged token taken")
		}
	}
}

// BenchmarkIssue measures a new challenge.
func BenchmarkIssue(b *testing.B) {
	iss := mustIssuer(b, &clock{t0}, keyA, keyB)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iss.Issue("sale-2026-11-27", "visitor-7f3a9c2e-41d8-4b9e-a0f1-3c5d7e9b2a64", 16, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSolve measures Solve at several difficulties, one challenge per
// iteration, reporting hashes/s (tried nonces over time) and the mean
// nonces tried (expected: 2^bits).
func BenchmarkSolve(b *testing.B) {
	iss := mustIssuer(b, &clock{t0}, keyA)
	for _, bits := range []int{8, 12, 16, 18, 20} {
		b.Run(fmt.Sprintf("bits=%d", bits), func(b *testing.B) {
			var tried uint64
			for b.Loop() {
				c := mustIssue(b, iss, "sale-2026-11-27", "visitor-7f3a9c2e-41d8-4b9e-a0f1-3c5d7e9b2a64", bits)
				sol, err := challenge.Solve(context.Background(), c.Token, nil)
				if err != nil {
					b.Fatal(err)
				}
				var n uint64
				fmt.Sscan(sol, &n)
				tried += n + 1
			}
			b.ReportMetric(float64(tried)/b.Elapsed().Seconds(), "hashes/s")
			b.ReportMetric(float64(tried)/float64(b.N), "tries/op")
		})
	}
}

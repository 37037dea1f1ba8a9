package entry_test

import (
	"testing"
	"time"

	"github.com/waitq/waitq/pkg/entry"
)

func BenchmarkSign(b *testing.B) {
	k, _ := entry.NewKeyring("k1", make([]byte, 32), nil)
	t := entry.Token{EventID: "sale1", UserID: "user@example.com", Expires: 2, IssuedAt: 1}
	b.ReportAllocs()
	for b.Loop() {
		k.Sign(t)
	}
}

func BenchmarkVerify(b *testing.B) {
	k, _ := entry.NewKeyring("k1", make([]byte, 32), nil)
	now := time.Now()
	tok := k.Sign(entry.Token{EventID: "sale1", UserID: "user@example.com", Expires: now.Add(time.Hour).UnixMilli()})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Verify(tok, "sale1", now); err != nil {
			b.Fatal(err)
		}
	}
}

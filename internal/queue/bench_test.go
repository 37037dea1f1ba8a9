package queue_test

import (
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
)

func BenchmarkTicketSign(b *testing.B) {
	s, _ := queue.NewTicketSigner("bench-secret-0123456789")
	t := queue.Ticket{EventID: "sale1", UserID: "user@example.com", JoinedAt: 1, Expires: 2}
	b.ReportAllocs()
	for b.Loop() {
		s.Sign(t)
	}
}

func BenchmarkTicketVerify(b *testing.B) {
	s, _ := queue.NewTicketSigner("bench-secret-0123456789")
	now := time.Now()
	tk := s.Sign(queue.Ticket{EventID: "sale1", UserID: "user@example.com", JoinedAt: 1, Expires: now.Add(time.Hour).UnixMilli()})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Verify(tk, "sale1", now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMessageEncode(b *testing.B) {
	m := queue.Message{V: 1, Op: queue.OpJoin, EventID: "sale1", UserID: "user@example.com", TS: 1_795_310_072_135, ID: "0123456789abcdef01234567"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeMessage(b *testing.B) {
	raw := []byte(`{"v":1,"op":"join","eventId":"sale1","userId":"user@example.com","ts":1795310072135,"id":"0123456789abcdef01234567"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := queue.DecodeMessage(raw); err != nil {
			b.Fatal(err)
		}
	}
}

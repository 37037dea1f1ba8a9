package queue_test

import (
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
)

var fuzzNow = time.UnixMilli(1_700_000_000_000)

func fuzzSigner(f *testing.F) *queue.TicketSigner {
	s, err := queue.NewTicketSigner("fuzz-secret-0123456789")
	if err != nil {
		f.Fatal(err)
	}
	return s
}

// FuzzTicketVerify: no input is accepted unless it is exactly a ticket the
// signer made, for the event asked about, not expired.
func FuzzTicketVerify(f *testing.F) {
	s := fuzzSigner(f)
	good := s.Sign(queue.Ticket{EventID: "e1", UserID: "u1", JoinedAt: 1, Expires: fuzzNow.Add(time.Hour).UnixMilli()})
	for _, seed := range []string{good, good[:len(good)-1], "v1.", "v1..", "v1.e30.AAAA", "", good + "x"} {
		f.Add(seed, "e1")
	}
	f.Add(good, "e2")
	f.Fuzz(func(t *testing.T, ticket, event string) {
		got, err := s.Verify(ticket, event, fuzzNow)
		if err != nil {
			if queue.ErrorCode(err) != queue.CodeInvalidTicket {
				t.Fatalf("error code %q for %q", queue.ErrorCode(err), ticket)
			}
			return
		}
		if s.Sign(got) != ticket || got.EventID != event || got.Expires <= fuzzNow.UnixMilli() {
			t.Fatalf("accepted a ticket the signer did not make for %q: %q → %+v", event, ticket, got)
		}
	})
}

// FuzzVisitorVerify: a visitor identity verifies only as the signer made
// it, unexpired, with a visitor id; a ticket under the same secret never
// passes for one; every refusal is invalid_identity.
func FuzzVisitorVerify(f *testing.F) {
	s := fuzzSigner(f)
	v := queue.Visitor{ID: "v:AAAAAAAAAAAAAAAAAAAAAA", Expires: fuzzNow.Add(time.Hour).UnixMilli()}
	good := s.SignVisitor(v)
	ticket := s.Sign(queue.Ticket{EventID: "e1", UserID: v.ID, Expires: v.Expires})
	for _, seed := range []string{good, good[:len(good)-1], ticket, "vis1.", "vis1.e30.AAAA", "", good + "x"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		got, err := s.VerifyVisitor(token, fuzzNow)
		if err != nil {
			if queue.ErrorCode(err) != queue.CodeInvalidIdentity {
				t.Fatalf("error code %q for %q", queue.ErrorCode(err), token)
			}
			return
		}
		if s.SignVisitor(got) != token || !queue.IsVisitorID(got.ID) || got.Expires <= fuzzNow.UnixMilli() {
			t.Fatalf("accepted an identity the signer did not make: %q → %+v", token, got)
		}
	})
}

// FuzzDecodeMessage: every decoded message is valid and survives a round
// trip; nothing panics.
func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(`{"v":1,"op":"join","eventId":"e1","userId":"u1","ts":5,"id":"x"}`))
	f.Add([]byte(`{"v":1,"op":"leave","eventId":"e1","userId":"u1","ts":5,"id":"x"}`))
	f.Add([]byte(`{"v":1,"op":"join","eventId":"e 1","userId":"u1","ts":5}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"v":2,"op":"admit","eventId":"e1","userId":"u1","ts":9,"expiresAt":99,"score":5,"joinTs":5}`))
	f.Add([]byte(`{"v":2,"op":"config","eventId":"e1","ts":9,"event":{"eventId":"e1","capacity":1,"staySeconds":1,"state":"open","partitions":1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := queue.DecodeMessage(b)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("decoded an invalid message %+v: %v", m, err)
		}
		enc, _ := m.Encode()
		again, err := queue.DecodeMessage(enc)
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("round trip of %+v: %+v, %v", m, again, err)
		}
	})
}

var (
	eventIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	userIDPattern  = regexp.MustCompile(`^[A-Za-z0-9._:@-]{1,128}$`)
)

// FuzzIDs: the hand-written validators agree with the contract's patterns.
func FuzzIDs(f *testing.F) {
	for _, s := range []string{"e1", "a b", "", "user@example.com", "é", "x{y}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := queue.ValidEventID(s), eventIDPattern.MatchString(s); got != want {
			t.Fatalf("ValidEventID(%q) = %v, pattern says %v", s, got, want)
		}
		if got, want := queue.ValidUserID(s), userIDPattern.MatchString(s); got != want {
			t.Fatalf("ValidUserID(%q) = %v, pattern says %v", s, got, want)
		}
	})
}

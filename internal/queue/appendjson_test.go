package queue

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/waitq/waitq/internal/testkit/oddtext"
)

func TestAppendJSONStringIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []string{"", "alice", "<script>", "a&b", "\u2028", "\xff\xfe", "tab\there", "😀", "\x7f"}
	for range 20000 {
		cases = append(cases, oddtext.String(r))
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendJSONString(%q) = %s, want x%s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "alice", "<&>", "\u2028\xff", "\"\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestTicketJSONIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		tk := Ticket{EventID: oddtext.String(r), UserID: oddtext.String(r), JoinedAt: r.Int64() - r.Int64(), Expires: r.Int64N(1 << 50)}
		want, _ := json.Marshal(tk)
		if got := tk.appendJSON(nil); string(got) != string(want) {
			t.Fatalf("%+v: appendJSON = %s, want %s", tk, got, want)
		}
	}
}

// TestSignIsTheGenericSigning: a ticket signed with the hand-written
// payload is the token the generic signer makes of encoding/json's.
func TestSignIsTheGenericSigning(t *testing.T) {
	s, err := NewTicketSigner("a-secret-of-some-length")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		tk := Ticket{EventID: oddtext.String(r), UserID: oddtext.String(r), JoinedAt: r.Int64N(1 << 45), Expires: r.Int64N(1 << 45)}
		if got, want := s.Sign(tk), s.ticket.sign(tk); got != want {
			t.Fatalf("%+v: Sign = %s, want %s", tk, got, want)
		}
	}
}

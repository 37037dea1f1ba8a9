package queue_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/b64"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/draw"
)

func TestIDValidation(t *testing.T) {
	tests := []struct {
		id            string
		event, userOK bool
	}{
		{"e1", true, true},
		{"Sale_2026-11", true, true},
		{strings.Repeat("e", 64), true, true},
		{strings.Repeat("e", 65), false, true},
		{strings.Repeat("u", 128), false, true},
		{strings.Repeat("u", 129), false, false},
		{"alice@example.com", false, true},
		{"user:42.x", false, true},
		{"", false, false},
		{"a b", false, false},
		{"a/b", false, false},
		{"a{b}", false, false},
		{"é", false, false},
		{"a\nb", false, false},
	}
	for _, tc := range tests {
		if got := queue.ValidEventID(tc.id); got != tc.event {
			t.Errorf("ValidEventID(%q) = %v, want %v", tc.id, got, tc.event)
		}
		if got := queue.ValidUserID(tc.id); got != tc.userOK {
			t.Errorf("ValidUserID(%q) = %v, want %v", tc.id, got, tc.userOK)
		}
	}
}

func TestMessageRoundTripAndRejects(t *testing.T) {
	m := queue.Message{V: 1, Op: queue.OpJoin, EventID: "e1", UserID: "u1", TS: 1700000000000, ID: "r1"}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := queue.DecodeMessage(b)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	bad := []string{
		``, `null`, `[]`, `{`, `"join"`,
		`{"v":2,"op":"join","eventId":"e1","userId":"u1","ts":1}`,
		`{"v":1,"op":"pause","eventId":"e1","userId":"u1","ts":1}`,
		`{"v":1,"op":"join","eventId":"e 1","userId":"u1","ts":1}`,
		`{"v":1,"op":"join","eventId":"e1","userId":"","ts":1}`,
		`{"v":1,"op":"join","eventId":"e1","userId":"u1","ts":0}`,
		`{"v":1,"op":"join","eventId":"e1","userId":"u1","ts":-5}`,
		`{"v":1,"op":"join","eventId":"e1","userId":"u1","ts":"soon"}`,
		`{"v":1,"op":"admit","eventId":"e1","userId":"u1","ts":9,"expiresAt":99,"score":5,"joinTs":5}`,
		`{"v":2,"op":"admit","eventId":"e1","userId":"u1","ts":9,"score":5,"joinTs":5}`,
		`{"v":2,"op":"admit","eventId":"e1","userId":"u1","ts":9,"expiresAt":99,"joinTs":5}`,
		`{"v":2,"op":"sweep","eventId":"e1","userId":"u1","ts":9}`,
		`{"v":2,"op":"release","eventId":"e1","ts":9}`,
		`{"v":2,"op":"config","eventId":"e1","ts":9}`,
		`{"v":2,"op":"config","eventId":"e1","ts":9,"event":{"eventId":"e2","capacity":1,"staySeconds":1,"state":"open","partitions":1}}`,
		`{"v":2,"op":"config","eventId":"e1","ts":9,"event":{"eventId":"e1","capacity":0,"staySeconds":1,"state":"open","partitions":1}}`,
		`{"v":2,"op":"config","eventId":"e1","ts":9,"seed":"zz","event":{"eventId":"e1","capacity":1,"staySeconds":1,"state":"open","partitions":1}}`,
		`{"v":3,"op":"admit","eventId":"e1","userId":"u1","ts":9,"expiresAt":99,"score":5,"joinTs":5}`,
	}
	for _, s := range bad {
		if m, err := queue.DecodeMessage([]byte(s)); err == nil {
			t.Errorf("DecodeMessage(%s) = %+v, want an error", s, m)
		}
	}
}

// TestConfigRecordOfTheOlderSpelling: a config record written before
// staySeconds was named (holdSeconds) decodes to the same stay.
func TestConfigRecordOfTheOlderSpelling(t *testing.T) {
	m, err := queue.DecodeMessage([]byte(`{"v":2,"op":"config","eventId":"e1","ts":9,"event":{"eventId":"e1","capacity":1,"holdSeconds":42,"state":"open","partitions":1}}`))
	if err != nil || m.Event.StaySeconds != 42 {
		t.Fatalf("DecodeMessage = %+v, %v; want a stay of 42 s", m.Event, err)
	}
}

// TestRecordsRoundTrip: every record decodes to what was encoded, and
// only records say Record.
func TestRecordsRoundTrip(t *testing.T) {
	seed, err := draw.NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	admit := queue.NewRecord(queue.OpAdmit, "e1", "u1", 9)
	admit.ExpiresAt, admit.Score, admit.ServedMark = 99, -5, 4
	sweep := queue.NewRecord(queue.OpSweep, "e1", "u1", 9)
	sweep.Score = 7
	ev := queue.Event{ID: "e1", Capacity: 3, StaySeconds: 60, State: queue.StatePaused, Partitions: 2, Schedule: queue.Schedule{OpensAt: 5000, PrequeueSeconds: 2}, Seed: &seed}
	for _, m := range []queue.Message{admit, sweep, queue.NewRecord(queue.OpRelease, "e1", "u1", 9), queue.NewRecord(queue.OpExpire, "e1", "u1", 9), queue.NewConfigRecord(ev, 9)} {
		t.Run(string(m.Op), func(t *testing.T) {
			if !m.Op.Record() {
				t.Errorf("%s is not a record", m.Op)
			}
			b, err := m.Encode()
			if err != nil {
				t.Fatal(err)
			}
			got, err := queue.DecodeMessage(b)
			if err != nil || !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip of %s: %+v, %v", b, got, err)
			}
			if m.Op == queue.OpConfig {
				if e := got.ConfiguredEvent(); !reflect.DeepEqual(e, ev) {
					t.Errorf("configured event %+v, want %+v", e, ev)
				}
			}
		})
	}
	if queue.OpJoin.Record() || queue.OpLeave.Record() {
		t.Error("join or leave says it is a record")
	}
}

func TestTicket(t *testing.T) {
	s, err := queue.NewTicketSigner("a-secret-of-some-length")
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1_700_000_000_000)
	tk := queue.Ticket{EventID: "e1", UserID: "u1", JoinedAt: now.UnixMilli(), Expires: now.Add(time.Hour).UnixMilli()}
	signed := s.Sign(tk)
	got, err := s.Verify(signed, "e1", now)
	if err != nil || got != tk {
		t.Fatalf("Verify(own ticket) = %+v, %v", got, err)
	}

	other, _ := queue.NewTicketSigner("another-secret-entirely")
	forged := other.Sign(tk)
	body, sig, _ := strings.Cut(signed[3:], ".")
	// A payload naming another user under the original signature.
	evil := s.Sign(queue.Ticket{EventID: "e1", UserID: "mallory", JoinedAt: 1, Expires: tk.Expires})
	evilBody, _, _ := strings.Cut(evil[3:], ".")
	tests := []struct {
		name, ticket, event string
		at                  time.Time
		want                error
	}{
		{"other secret", forged, "e1", now, queue.ErrTicketSignature},
		{"swapped payload", "v1." + evilBody + "." + sig, "e1", now, queue.ErrTicketSignature},
		{"shorter signature", "v1." + body + "." + b64.Encode(mustDecode(t, sig)[:29]), "e1", now, queue.ErrTicketSignature},
		{"signature with a newline", signed + "\n", "e1", now, queue.ErrTicketMalformed},
		{"expired", signed, "e1", now.Add(time.Hour), queue.ErrTicketExpired},
		{"other event", signed, "e2", now, queue.ErrTicketOtherEvent},
		{"empty", "", "e1", now, queue.ErrTicketMalformed},
		{"no prefix", body + "." + sig, "e1", now, queue.ErrTicketMalformed},
		{"no signature", "v1." + body, "e1", now, queue.ErrTicketMalformed},
		{"bad base64 signature", "v1." + body + ".!!", "e1", now, queue.ErrTicketMalformed},
		{"too long", "v1." + strings.Repeat("A", queue.MaxTicketLen) + "." + sig, "e1", now, queue.ErrTicketMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Verify(tc.ticket, tc.event, tc.at)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %+v, %v; want %v", got, err, tc.want)
			}
			if queue.ErrorCode(err) != queue.CodeInvalidTicket {
				t.Errorf("code %q", queue.ErrorCode(err))
			}
		})
	}
	if _, err := queue.NewTicketSigner(""); err == nil {
		t.Error("empty secret accepted")
	}
}

func mustDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := b64.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEventValidate(t *testing.T) {
	ok := queue.Event{ID: "e1", Capacity: 1, StaySeconds: 1, State: queue.StateOpen, Partitions: 1}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, fine := range []func(*queue.Event){
		func(e *queue.Event) { e.State = queue.StatePaused },
		func(e *queue.Event) { e.State = queue.StateClosed },
		func(e *queue.Event) { e.AdmitPerMinute = queue.MaxAdmitPerMinute },
		func(e *queue.Event) { e.StaySeconds, e.ArrivalSeconds = 300, queue.MinArrivalSeconds },
		func(e *queue.Event) { e.StaySeconds, e.ArrivalSeconds = 7200, queue.MaxArrivalSeconds },
	} {
		e := ok
		fine(&e)
		if err := e.Validate(); err != nil {
			t.Errorf("%+v refused: %v", e, err)
		}
	}
	for name, mut := range map[string]func(*queue.Event){
		"id":            func(e *queue.Event) { e.ID = "a b" },
		"capacity 0":    func(e *queue.Event) { e.Capacity = 0 },
		"capacity huge": func(e *queue.Event) { e.Capacity = queue.MaxCapacity + 1 },
		"hold 0":        func(e *queue.Event) { e.StaySeconds = 0 },
		"hold huge":     func(e *queue.Event) { e.StaySeconds = queue.MaxStaySeconds + 1 },
		"state":         func(e *queue.Event) { e.State = "asleep" },
		"rate negative": func(e *queue.Event) { e.AdmitPerMinute = -1 },
		"rate huge":     func(e *queue.Event) { e.AdmitPerMinute = queue.MaxAdmitPerMinute + 1 },
		"partitions 0":  func(e *queue.Event) { e.Partitions = 0 },
		"arrival short": func(e *queue.Event) { e.StaySeconds, e.ArrivalSeconds = 300, queue.MinArrivalSeconds-1 },
		"arrival long":  func(e *queue.Event) { e.StaySeconds, e.ArrivalSeconds = 7200, queue.MaxArrivalSeconds+1 },
		"arrival stay":  func(e *queue.Event) { e.StaySeconds, e.ArrivalSeconds = 60, 60 },
		"arrival -1":    func(e *queue.Event) { e.StaySeconds, e.ArrivalSeconds = 60, -1 },
	} {
		e := ok
		mut(&e)
		if err := e.Validate(); err == nil {
			t.Errorf("%s: %+v accepted", name, e)
		}
	}
}

func TestResumeTokens(t *testing.T) {
	s, err := queue.NewTicketSigner("secret")
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1_000_000)
	r := queue.NewResume("e1", "v:abc", 1234, now, time.Minute)
	tok := s.SignResume(r)
	got, err := s.VerifyResume(tok, "e1", now)
	if err != nil || got != r {
		t.Fatalf("VerifyResume = %+v, %v; want %+v", got, err, r)
	}
	if _, err := s.VerifyResume(tok, "e2", now); err != queue.ErrTicketOtherEvent {
		t.Errorf("another event: %v", err)
	}
	if _, err := s.VerifyResume(tok, "e1", now.Add(time.Minute)); err != queue.ErrTicketExpired {
		t.Errorf("expired: %v", err)
	}
	if _, err := s.VerifyResume(tok[:len(tok)-2]+"AA", "e1", now); err == nil {
		t.Error("a forged signature verified")
	}
	// A ticket or a visitor identity is not a resume token, nor the reverse.
	ticket := s.Sign(queue.Ticket{EventID: "e1", UserID: "v:abc", JoinedAt: 1, Expires: now.Add(time.Hour).UnixMilli()})
	if _, err := s.VerifyResume(ticket, "e1", now); err == nil {
		t.Error("a ticket verified as a resume token")
	}
	if _, err := s.Verify(tok, "e1", now); err == nil {
		t.Error("a resume token verified as a ticket")
	}
	other, _ := queue.NewTicketSigner("other")
	if _, err := other.VerifyResume(tok, "e1", now); err != queue.ErrTicketSignature {
		t.Errorf("another secret: %v", err)
	}
}

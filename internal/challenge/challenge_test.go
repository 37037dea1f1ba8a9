package challenge_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/challenge"
	"github.com/waitq/waitq/internal/queue"
)

var (
	keyA = bytes.Repeat([]byte("a"), 32)
	keyB = bytes.Repeat([]byte("b"), 40)
	t0   = time.UnixMilli(1_800_000_000_000)
)

// clock is a settable time for an Issuer.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// mustIssuer returns an issuer over keys whose time is c's.
func mustIssuer(tb testing.TB, c *clock, keys ...[]byte) *challenge.Issuer {
	tb.Helper()
	iss, err := challenge.NewIssuer(keys, c.now)
	if err != nil {
		tb.Fatal(err)
	}
	return iss
}

// mustIssue issues a challenge or fails tb.
func mustIssue(tb testing.TB, iss *challenge.Issuer, ev, sub string, difficulty int) challenge.Challenge {
	tb.Helper()
	c, err := iss.Issue(ev, sub, difficulty, time.Minute)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// mustSolve solves token or fails tb.
func mustSolve(tb testing.TB, token string) string {
	tb.Helper()
	s, err := challenge.Solve(context.Background(), token, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// zeroBits counts the leading zero bits of SHA-256(token + ":" + nonce).
func zeroBits(token, nonce string) int {
	sum := sha256.Sum256([]byte(token + ":" + nonce))
	n := 0
	for _, b := range sum {
		n += bits.LeadingZeros8(b)
		if b != 0 {
			break
		}
	}
	return n
}

// failing returns a well-formed nonce that does not solve token.
func failing(token string, difficulty int) string {
	for n := 0; ; n++ {
		if s := strconv.Itoa(n); zeroBits(token, s) < difficulty {
			return s
		}
	}
}

func TestRoundTrip(t *testing.T) {
	c := &clock{t0}
	iss := mustIssuer(t, c, keyA)
	for _, d := range []int{1, 4, 8, 12} {
		issued, err := iss.Issue("e1", "user@example.com", d, 90*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if want := t0.Add(90 * time.Second); !issued.ExpiresAt.Equal(want) || issued.Difficulty != d || issued.EventID != "e1" || issued.Subject != "user@example.com" || len(issued.ID) != 22 {
			t.Fatalf("issued %+v", issued)
		}
		parsed, err := challenge.Parse(issued.Token)
		if err != nil || parsed != issued {
			t.Fatalf("Parse = %+v, %v; want %+v", parsed, err, issued)
		}
		sol := mustSolve(t, issued.Token)
		if zeroBits(issued.Token, sol) < d {
			t.Fatalf("Solve gave %s with %d zero bits, want %d", sol, zeroBits(issued.Token, sol), d)
		}
		got, err := iss.Verify(issued.Token, sol, "e1", "user@example.com", d)
		if err != nil || got != issued {
			t.Fatalf("Verify = %+v, %v; want %+v", got, err, issued)
		}
	}
}

func TestIDsAreUnique(t *testing.T) {
	iss := mustIssuer(t, &clock{t0}, keyA)
	seen := map[string]bool{}
	for range 1000 {
		c := mustIssue(t, iss, "e1", "u1", 1)
		if seen[c.ID] {
			t.Fatalf("ID %s issued twice", c.ID)
		}
		seen[c.ID] = true
	}
}

// TestScheme rebuilds a challenge from the package documentation alone, as
// a solver or verifier in another language would read it.
func TestScheme(t *testing.T) {
	iss := mustIssuer(t, &clock{t0}, keyA)
	c := mustIssue(t, iss, "sale-2026", "alice", 10)
	parts := strings.Split(c.Token, ".")
	if len(parts) != 3 || parts[0] != "c1" {
		t.Fatalf("token %q is not c1.<payload>.<mac>", c.Token)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	kid := sha256.Sum256(keyA)
	var want []byte
	want = append(want, kid[0], 10)
	want = binary.BigEndian.AppendUint64(want, uint64(t0.Add(time.Minute).UnixMilli()))
	salt, _ := base64.RawURLEncoding.DecodeString(c.ID)
	want = append(want, salt...)
	want = append(want, byte(len("sale-2026")))
	want = append(want, "sale-2026"...)
	want = append(want, byte(len("alice")))
	want = append(want, "alice"...)
	if !bytes.Equal(raw, want) {
		t.Fatalf("payload\n%x, want\n%x", raw, want)
	}
	m := hmac.New(sha256.New, keyA)
	m.Write([]byte("c1." + parts[1]))
	if mac := base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16]); mac != parts[2] {
		t.Fatalf("mac %s, want %s", parts[2], mac)
	}
}

func TestVerifyRefuses(t *testing.T) {
	c := &clock{t0}
	iss := mustIssuer(t, c, keyA)
	good := mustIssue(t, iss, "e1", "u1", 8)
	sol := mustSolve(t, good.Token)
	other := mustIssuer(t, c, keyB)
	foreign := mustIssue(t, other, "e1", "u1", 8)
	// The payload of one token under the MAC of another.
	payload := func(tok string) string { return strings.Split(tok, ".")[1] }
	mac := func(tok string) string { return strings.Split(tok, ".")[2] }
	easier := mustIssue(t, iss, "e1", "u1", 8)
	lastChar := good.Token[len(good.Token)-1]
	noncanonical := good.Token[:len(good.Token)-1] + string(lastChar^1) // A, Q, g or w: sets an unused bit, or is no base64url

	tests := []struct {
		name            string
		token, solution string
		event, subject  string
		min             int
		after           time.Duration
		want            string
	}{
		{"empty", "", sol, "e1", "u1", 8, 0, "malformed"},
		{"no prefix", strings.TrimPrefix(good.Token, "c1."), sol, "e1", "u1", 8, 0, "malformed"},
		{"other version", "c2." + strings.TrimPrefix(good.Token, "c1."), sol, "e1", "u1", 8, 0, "malformed"},
		{"truncated", good.Token[:len(good.Token)-1], sol, "e1", "u1", 8, 0, "malformed"},
		{"extended", good.Token + "A", sol, "e1", "u1", 8, 0, "malformed"},
		{"padding", "c1." + payload(good.Token) + "=." + mac(good.Token), sol, "e1", "u1", 8, 0, "malformed"},
		{"standard alphabet", "c1.+" + good.Token[4:], sol, "e1", "u1", 8, 0, "malformed"},
		{"non-canonical mac", noncanonical, sol, "e1", "u1", 8, 0, "malformed"},
		{"short payload", "c1.AAAA." + mac(good.Token), sol, "e1", "u1", 8, 0, "malformed"},
		{"forged", "c1." + payload(good.Token) + "." + mac(foreign.Token), sol, "e1", "u1", 8, 0, "signature is wrong"},
		{"other key", foreign.Token, mustSolve(t, foreign.Token), "e1", "u1", 8, 0, "signature is wrong"},
		{"spliced", "c1." + payload(easier.Token) + "." + mac(good.Token), sol, "e1", "u1", 8, 0, "signature is wrong"},
		{"expired", good.Token, sol, "e1", "u1", 8, time.Minute, "expired"},
		{"long expired", good.Token, sol, "e1", "u1", 8, time.Hour, "expired"},
		{"other event", good.Token, sol, "e2", "u1", 8, 0, "another event"},
		{"other subject", good.Token, sol, "e1", "u2", 8, 0, "another visitor"},
		{"below the minimum", good.Token, sol, "e1", "u1", 9, 0, "asks 8 bits, less than the event's 9"},
		{"empty solution", good.Token, "", "e1", "u1", 8, 0, "decimal digits"},
		{"leading zero", good.Token, "0" + sol, "e1", "u1", 8, 0, "decimal digits"},
		{"sign", good.Token, "+" + sol, "e1", "u1", 8, 0, "decimal digits"},
		{"space", good.Token, sol + " ", "e1", "u1", 8, 0, "decimal digits"},
		{"hex", good.Token, "ff", "e1", "u1", 8, 0, "decimal digits"},
		{"too long", good.Token, "1" + strings.Repeat("0", challenge.MaxSolutionLen), "e1", "u1", 8, 0, "decimal digits"},
		{"wrong solution", good.Token, failing(good.Token, 8), "e1", "u1", 8, 0, "does not start with 8 zero bits"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t0.Add(tc.after)
			defer func() { c.t = t0 }()
			got, err := iss.Verify(tc.token, tc.solution, tc.event, tc.subject, tc.min)
			if err == nil {
				t.Fatalf("Verify took it: %+v", got)
			}
			if queue.ErrorCode(err) != queue.CodeInvalidChallenge {
				t.Fatalf("code %q (%v), want %q", queue.ErrorCode(err), err, queue.CodeInvalidChallenge)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to say %q", err, tc.want)
			}
		})
	}
	// The good one, for contrast, just before it expires and at a lower
	// minimum.
	c.t = t0.Add(time.Minute - time.Millisecond)
	if _, err := iss.Verify(good.Token, sol, "e1", "u1", 1); err != nil {
		t.Fatalf("good challenge refused: %v", err)
	}
}

func TestKeyRotation(t *testing.T) {
	c := &clock{t0}
	old := mustIssuer(t, c, keyA)
	rotated := mustIssuer(t, c, keyB, keyA) // the new key signs, the old one still verifies
	retired := mustIssuer(t, c, keyB)
	before := mustIssue(t, old, "e1", "u1", 4)
	after := mustIssue(t, rotated, "e1", "u1", 4)
	tests := []struct {
		name string
		iss  *challenge.Issuer
		c    challenge.Challenge
		ok   bool
	}{
		{"old key, old issuer", old, before, true},
		{"old key, rotated issuer", rotated, before, true},
		{"old key, retired", retired, before, false},
		{"new key, rotated issuer", rotated, after, true},
		{"new key, retired", retired, after, true},
		{"new key, old issuer", old, after, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.iss.Verify(tc.c.Token, mustSolve(t, tc.c.Token), "e1", "u1", 4)
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "signature is wrong")) {
				t.Fatalf("Verify = %v, want a wrong signature", err)
			}
		})
	}
}

func TestSolutionIsBoundToItsChallenge(t *testing.T) {
	iss := mustIssuer(t, &clock{t0}, keyA)
	a := mustIssue(t, iss, "e1", "u1", 12)
	sol := mustSolve(t, a.Token)
	for range 20 {
		b := mustIssue(t, iss, "e1", "u1", 12)
		if zeroBits(b.Token, sol) >= 12 {
			continue // a 1 in 4096 chance that it solves b too
		}
		if _, err := iss.Verify(b.Token, sol, "e1", "u1", 12); err == nil || !strings.Contains(err.Error(), "does not start with") {
			t.Fatalf("a's solution on b: %v", err)
		}
		return
	}
	t.Fatal("no challenge that a's solution does not solve")
}

func TestNewIssuerRefuses(t *testing.T) {
	tests := []struct {
		name string
		keys [][]byte
	}{
		{"no keys", nil},
		{"short key", [][]byte{make([]byte, 31)}},
		{"a short second key", [][]byte{keyA, []byte("short")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := challenge.NewIssuer(tc.keys, nil); err == nil {
				t.Fatal("NewIssuer took it")
			}
		})
	}
	// The keys are copied.
	k := bytes.Clone(keyA)
	iss, err := challenge.NewIssuer([][]byte{k}, func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	c := mustIssue(t, iss, "e1", "u1", 1)
	k[0] ^= 1
	if _, err := iss.Verify(c.Token, mustSolve(t, c.Token), "e1", "u1", 1); err != nil {
		t.Fatalf("a change to the caller's key changed the issuer: %v", err)
	}
}

func TestIssueRefuses(t *testing.T) {
	iss := mustIssuer(t, &clock{t0}, keyA)
	long := strings.Repeat("x", challenge.MaxIDLen+1)
	tests := []struct {
		name       string
		ev, sub    string
		difficulty int
		ttl        time.Duration
	}{
		{"no event", "", "u1", 8, time.Minute},
		{"long event", long, "u1", 8, time.Minute},
		{"no subject", "e1", "", 8, time.Minute},
		{"long subject", "e1", long, 8, time.Minute},
		{"no difficulty", "e1", "u1", 0, time.Minute},
		{"too hard", "e1", "u1", queue.MaxChallengeDifficulty + 1, time.Minute},
		{"no ttl", "e1", "u1", 8, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := iss.Issue(tc.ev, tc.sub, tc.difficulty, tc.ttl); err == nil {
				t.Fatalf("Issue took it: %+v", c)
			}
		})
	}
	// The longest ids fit.
	c := mustIssue(t, iss, long[1:], long[1:], 1)
	if _, err := iss.Verify(c.Token, mustSolve(t, c.Token), long[1:], long[1:], 1); err != nil {
		t.Fatalf("longest ids: %v", err)
	}
}

func TestSolveStops(t *testing.T) {
	iss := mustIssuer(t, &clock{t0}, keyA)
	// A challenge of the most bits is often solved before three progress
	// reports, or after the third (which cancels) and before the next
	// check of the context: such a one proves nothing, and another is
	// drawn.
	for try := 0; ; try++ {
		c := mustIssue(t, iss, "e1", "u1", queue.MaxChallengeDifficulty)
		ctx, cancel := context.WithCancel(context.Background())
		var reports []uint64
		sol, err := challenge.Solve(ctx, c.Token, func(tried uint64) {
			reports = append(reports, tried)
			if len(reports) == 3 {
				cancel()
			}
		})
		cancel()
		if err == nil && try < 40 {
			t.Logf("solved after %d reports (%s): another", len(reports), sol)
			continue
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Solve = %q, %v, want canceled", sol, err)
		}
		if len(reports) != 3 || reports[0] == 0 || reports[1] <= reports[0] || reports[2] <= reports[1] {
			t.Fatalf("progress %v", reports)
		}
		break
	}
	if _, err := challenge.Solve(context.Background(), "c1.nope", nil); queue.ErrorCode(err) != queue.CodeInvalidChallenge {
		t.Fatalf("Solve of a malformed token: %v", err)
	}
}

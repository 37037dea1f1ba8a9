package challenge_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/challenge"
	"github.com/waitq/waitq/internal/queue"
)

// FuzzVerify: Verify never panics, refuses everything with
// invalid_challenge, and takes nothing but a challenge signed with one of the
// issuer's keys (as documented) for the event and subject asked about,
// unexpired, with a solution that meets its difficulty.
func FuzzVerify(f *testing.F) {
	c := &clock{t0}
	iss := mustIssuer(f, c, keyA, keyB)
	good := mustIssue(f, iss, "e1", "u1", 4)
	sol := mustSolve(f, good.Token)
	for _, seed := range []struct{ token, solution string }{
		{good.Token, sol},
		{good.Token, "0"},
		{good.Token, "00"},
		{good.Token + "A", sol},
		{good.Token[:len(good.Token)-1], sol},
		{"c1..", sol},
		{"c1.AAAA.AAAAAAAAAAAAAAAAAAAAAA", "1"},
		{"", ""},
		{strings.Replace(good.Token, "c1.", "c2.", 1), sol},
	} {
		f.Add(seed.token, seed.solution)
	}
	f.Fuzz(func(t *testing.T, token, solution string) {
		got, err := iss.Verify(token, solution, "e1", "u1", 4)
		if err != nil {
			if queue.ErrorCode(err) != queue.CodeInvalidChallenge {
				t.Fatalf("code %q for %q", queue.ErrorCode(err), token)
			}
			return
		}
		// Each fuzzing process issues its own good token, so the one taken
		// may be another process's: what matters is that it is one the
		// keys signed, as the documentation says, and solved.
		want, ok := referenceParse(token)
		if !ok || !signed(token) || got != want || want.EventID != "e1" || want.Subject != "u1" || want.Difficulty < 4 ||
			!want.ExpiresAt.After(t0) || zeroBits(token, solution) < want.Difficulty {
			t.Fatalf("took %q with %q: %+v", token, solution, got)
		}
	})
}

// signed reports whether token's mac is the documented HMAC of its
// payload under keyA or keyB.
func signed(token string) bool {
	i := strings.LastIndexByte(token, '.')
	for _, k := range [][]byte{keyA, keyB} {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(token[:i]))
		if base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16]) == token[i+1:] {
			return true
		}
	}
	return false
}

// FuzzParse: Parse never panics and agrees with a reading of the package
// documentation built on the standard library: it takes exactly the tokens
// whose parts are canonical base64url and whose record is well formed.
func FuzzParse(f *testing.F) {
	iss := mustIssuer(f, &clock{t0}, keyA)
	for _, seed := range []string{
		mustIssue(f, iss, "e1", "u1", 4).Token,
		mustIssue(f, iss, strings.Repeat("e", 255), strings.Repeat("u", 255), queue.MaxChallengeDifficulty).Token,
		"c1.AAAA.AAAAAAAAAAAAAAAAAAAAAA",
		"c1..",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		got, err := challenge.Parse(token)
		want, ok := referenceParse(token)
		if ok != (err == nil) {
			t.Fatalf("Parse(%q) = %+v, %v; the reference says ok=%v", token, got, err, ok)
		}
		if err != nil {
			if queue.ErrorCode(err) != queue.CodeInvalidChallenge {
				t.Fatalf("code %q", queue.ErrorCode(err))
			}
			return
		}
		if got != want {
			t.Fatalf("Parse(%q) = %+v, want %+v", token, got, want)
		}
	})
}

// referenceParse reads token as the package documentation describes it,
// with the standard library's base64.
func referenceParse(token string) (challenge.Challenge, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] != "c1" || len(parts[2]) != 22 {
		return challenge.Challenge{}, false
	}
	canonical := func(s string) ([]byte, bool) {
		b, err := base64.RawURLEncoding.Strict().DecodeString(s)
		return b, err == nil && base64.RawURLEncoding.EncodeToString(b) == s
	}
	if _, ok := canonical(parts[2]); !ok {
		return challenge.Challenge{}, false
	}
	raw, ok := canonical(parts[1])
	if !ok || len(raw) < 28 {
		return challenge.Challenge{}, false
	}
	c := challenge.Challenge{Token: token, Difficulty: int(raw[1]), ID: base64.RawURLEncoding.EncodeToString(raw[10:26])}
	exp := binary.BigEndian.Uint64(raw[2:10])
	c.ExpiresAt = time.UnixMilli(int64(exp))
	e := int(raw[26])
	if e == 0 || len(raw) < 28+e {
		return challenge.Challenge{}, false
	}
	c.EventID = string(raw[27 : 27+e])
	s := int(raw[27+e])
	if s == 0 || len(raw) != 28+e+s || c.Difficulty == 0 || exp >= 1<<63 {
		return challenge.Challenge{}, false
	}
	c.Subject = string(raw[28+e:])
	return c, true
}

package challenge

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"sync"
	"time"

	"github.com/waitq/waitq/internal/queue"
)

// Limits and sizes of the scheme (see the package documentation).
const (
	// Prefix starts every version-1 challenge.
	Prefix = "c1."
	// MinKeyLen is the shortest HMAC key an Issuer takes, in bytes.
	MinKeyLen = 32
	// MaxIDLen bounds the event id and the subject, in bytes.
	MaxIDLen = 255
	// MaxSolutionLen bounds a solution's decimal digits.
	MaxSolutionLen = 20
	// DefaultTTL is a sensible lifetime for a challenge: enough to solve
	// queue.MaxChallengeDifficulty on a slow phone, short enough that the
	// replay store stays small.
	DefaultTTL = 5 * time.Minute

	saltLen   = 16
	macLen    = 16
	fixedLen  = 1 + 1 + 8 + saltLen // key id, difficulty, expiresAt, salt
	maxRawLen = fixedLen + 1 + MaxIDLen + 1 + MaxIDLen
	// maxTokenLen is the longest well-formed token.
	maxTokenLen = len(Prefix) + (maxRawLen*8+5)/6 + 1 + (macLen*8+5)/6
	// macTextLen is the length of <mac>.
	macTextLen = (macLen*8 + 5) / 6
)

// Challenge is an issued or verified challenge.
type Challenge struct {
	// Token is the challenge as the client gets it and sends it back.
	Token string
	// EventID is the event the challenge admits a join to.
	EventID string
	// Subject is the visitor (user id) the challenge is for.
	Subject string
	// Difficulty is the leading zero bits a solution's hash needs.
	Difficulty int
	// ExpiresAt is when the challenge stops being taken (millisecond
	// precision).
	ExpiresAt time.Time
	// ID is unique to the challenge (base64url of its salt, 22
	// characters): the replay store's key, kept until ExpiresAt.
	ID string
}

// Issuer issues and verifies challenges under a list of keys.
type Issuer struct {
	keys    []key
	now     func() time.Time
	scratch sync.Pool // *scratch
}

type key struct {
	id     byte
	secret []byte
}

// scratch is one verification's working memory, pooled so that Verify
// allocates nothing but the challenge's ID.
type scratch struct {
	macs []hash.Hash // one HMAC per key, in the issuer's order
	raw  [maxRawLen]byte
	buf  [maxTokenLen + 1 + MaxSolutionLen]byte
	sum  [sha256.Size]byte
}

// NewIssuer returns an Issuer that signs with keys[0] and verifies with
// every key, reading the time from now (time.Now when nil). Each key must be
// at least MinKeyLen bytes; the keys are copied.
func NewIssuer(keys [][]byte, now func() time.Time) (*Issuer, error) {
	if len(keys) == 0 {
		return nil, errors.New("challenge: no key")
	}
	if now == nil {
		now = time.Now
	}
	iss := &Issuer{now: now}
	for n, k := range keys {
		if len(k) < MinKeyLen {
			return nil, fmt.Errorf("challenge: key %d is %d bytes, want at least %d", n, len(k), MinKeyLen)
		}
		id := sha256.Sum256(k)
		iss.keys = append(iss.keys, key{id: id[0], secret: append([]byte(nil), k...)})
	}
	iss.scratch.New = func() any {
		s := &scratch{macs: make([]hash.Hash, len(iss.keys))}
		for n, k := range iss.keys {
			s.macs[n] = hmac.New(sha256.New, k.secret)
		}
		return s
	}
	return iss, nil
}

// Issue returns a new challenge for subject joining eventID, asking
// difficulty leading zero bits (1 to queue.MaxChallengeDifficulty) and
// valid for ttl.
func (i *Issuer) Issue(eventID, subject string, difficulty int, ttl time.Duration) (Challenge, error) {
	switch {
	case len(eventID) < 1 || len(eventID) > MaxIDLen:
		return Challenge{}, fmt.Errorf("challenge: event id must be 1 to %d bytes", MaxIDLen)
	case len(subject) < 1 || len(subject) > MaxIDLen:
		return Challenge{}, fmt.Errorf("challenge: subject must be 1 to %d bytes", MaxIDLen)
	case difficulty < 1 || difficulty > queue.MaxChallengeDifficulty:
		return Challenge{}, fmt.Errorf("challenge: difficulty must be 1 to %d bits", queue.MaxChallengeDifficulty)
	case ttl < time.Millisecond:
		return Challenge{}, fmt.Errorf("challenge: ttl %v is too short", ttl)
	}
	exp := i.now().Add(ttl).UnixMilli()
	raw := make([]byte, fixedLen, fixedLen+2+len(eventID)+len(subject))
	raw[0] = i.keys[0].id
	raw[1] = byte(difficulty)
	binary.BigEndian.PutUint64(raw[2:10], uint64(exp))
	_, _ = rand.Read(raw[10:fixedLen]) // never fails (crypto/rand)
	raw = append(raw, byte(len(eventID)))
	raw = append(raw, eventID...)
	raw = append(raw, byte(len(subject)))
	raw = append(raw, subject...)

	b := make([]byte, 0, len(Prefix)+base64.RawURLEncoding.EncodedLen(len(raw))+1+macTextLen)
	b = append(b, Prefix...)
	b = base64.RawURLEncoding.AppendEncode(b, raw)
	s := i.scratch.Get().(*scratch)
	mac := s.macs[0]
	mac.Reset()
	mac.Write(b)
	sum := mac.Sum(s.sum[:0])
	b = append(b, '.')
	b = base64.RawURLEncoding.AppendEncode(b, sum[:macLen])
	i.scratch.Put(s)
	return Challenge{
		Token:      string(b),
		EventID:    eventID,
		Subject:    subject,
		Difficulty: difficulty,
		ExpiresAt:  time.UnixMilli(exp),
		ID:         base64.RawURLEncoding.EncodeToString(raw[10:fixedLen]),
	}, nil
}

// Verify checks that solution solves token, a challenge this issuer (under
// any of its keys) issued for subject joining eventID, unexpired, asking at
// least minDifficulty bits. It returns the challenge, whose ID the caller
// must record until ExpiresAt to refuse a second use; or a
// queue.CodeInvalidChallenge error saying what is wrong.
func (i *Issuer) Verify(token, solution, eventID, subject string, minDifficulty int) (Challenge, error) {
	s := i.scratch.Get().(*scratch)
	defer i.scratch.Put(s)
	f, ok := parse(token, s.raw[:])
	if !ok {
		return Challenge{}, errMalformed
	}
	signed := token[:len(token)-1-macTextLen]
	var mac [macLen]byte
	decode(mac[:], token[len(signed)+1:]) // parse checked it
	n := copy(s.buf[:], signed)
	good := 0
	for k := range i.keys {
		if i.keys[k].id != f.keyID {
			continue
		}
		h := s.macs[k]
		h.Reset()
		h.Write(s.buf[:n])
		good |= subtle.ConstantTimeCompare(h.Sum(s.sum[:0])[:macLen], mac[:])
	}
	if good != 1 {
		return Challenge{}, errForged
	}
	now := i.now().UnixMilli()
	switch {
	case now >= f.expiresAt:
		return Challenge{}, queue.Errorf(queue.CodeInvalidChallenge, "the challenge expired at %s; ask for a new one", time.UnixMilli(f.expiresAt).UTC().Format(time.RFC3339))
	case string(f.eventID) != eventID:
		return Challenge{}, queue.Errorf(queue.CodeInvalidChallenge, "the challenge is for another event")
	case string(f.subject) != subject:
		return Challenge{}, queue.Errorf(queue.CodeInvalidChallenge, "the challenge is for another visitor")
	case f.difficulty < minDifficulty:
		return Challenge{}, queue.Errorf(queue.CodeInvalidChallenge, "the challenge asks %d bits, less than the event's %d now; ask for a new one", f.difficulty, minDifficulty)
	case !validSolution(solution):
		return Challenge{}, queue.Errorf(queue.CodeInvalidChallenge, "the solution must be 1 to %d decimal digits without leading zeros", MaxSolutionLen)
	}
	n = copy(s.buf[:], token)
	s.buf[n] = ':'
	n++
	n += copy(s.buf[n:], solution)
	if !meets(sha256.Sum256(s.buf[:n]), f.difficulty) {
		return Challenge{}, queue.Errorf(queue.CodeInvalidChallenge, "the solution's hash does not start with %d zero bits", f.difficulty)
	}
	return Challenge{
		Token:      token,
		EventID:    eventID,
		Subject:    subject,
		Difficulty: f.difficulty,
		ExpiresAt:  time.UnixMilli(f.expiresAt),
		ID:         base64.RawURLEncoding.EncodeToString(f.salt),
	}, nil
}

var (
	errMalformed = queue.Errorf(queue.CodeInvalidChallenge, "the challenge is malformed")
	errForged    = queue.Errorf(queue.CodeInvalidChallenge, "the challenge's signature is wrong (forged, or signed by a retired key)")
)

// Parse reads a challenge without checking its MAC, for solvers: anyone
// can read a challenge, only the issuer can tell it is genuine.
func Parse(token string) (Challenge, error) {
	var raw [maxRawLen]byte
	f, ok := parse(token, raw[:])
	if !ok {
		return Challenge{}, errMalformed
	}
	return Challenge{
		Token:      token,
		EventID:    string(f.eventID),
		Subject:    string(f.subject),
		Difficulty: f.difficulty,
		ExpiresAt:  time.UnixMilli(f.expiresAt),
		ID:         base64.RawURLEncoding.EncodeToString(f.salt),
	}, nil
}

// fields are a token's record, slices into the buffer parse decoded into.
type fields struct {
	keyID            byte
	difficulty       int
	expiresAt        int64
	salt             []byte
	eventID, subject []byte
}

// parse decodes token's payload into raw (maxRawLen bytes) and checks that
// the token is well formed, including its mac's encoding.
func parse(token string, raw []byte) (fields, bool) {
	if len(token) > maxTokenLen || len(token) < len(Prefix)+1+macTextLen || token[:len(Prefix)] != Prefix || token[len(token)-1-macTextLen] != '.' {
		return fields{}, false
	}
	var mac [macLen]byte
	if _, ok := decode(mac[:], token[len(token)-macTextLen:]); !ok {
		return fields{}, false
	}
	n, ok := decode(raw, token[len(Prefix):len(token)-1-macTextLen])
	if !ok || n < fixedLen+2 {
		return fields{}, false
	}
	r := raw[:n]
	f := fields{keyID: r[0], difficulty: int(r[1]), expiresAt: int64(binary.BigEndian.Uint64(r[2:10])), salt: r[10:fixedLen]}
	r = r[fixedLen:]
	e := int(r[0])
	if e == 0 || len(r) < 1+e+1 {
		return fields{}, false
	}
	f.eventID, r = r[1:1+e], r[1+e:]
	sub := int(r[0])
	if sub == 0 || len(r) != 1+sub || f.difficulty == 0 || f.expiresAt < 0 {
		return fields{}, false
	}
	f.subject = r[1:]
	return f, true
}

// decode decodes canonical unpadded base64url s into dst, which must be
// large enough, returning the bytes written; false for any other text
// (another alphabet, padding, a length of 1 mod 4, unused bits set).
func decode(dst []byte, s string) (int, bool) {
	if len(s)%4 == 1 || len(s)*6/8 > len(dst) {
		return 0, false
	}
	n := 0
	var acc uint32
	bits := 0
	for k := 0; k < len(s); k++ {
		v := decodeMap[s[k]]
		if v == 0xff {
			return 0, false
		}
		acc = acc<<6 | uint32(v)
		bits += 6
		if bits >= 8 {
			bits -= 8
			dst[n] = byte(acc >> bits)
			n++
		}
	}
	if acc&(1<<bits-1) != 0 {
		return 0, false
	}
	return n, true
}

var decodeMap = func() (m [256]byte) {
	for k := range m {
		m[k] = 0xff
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for k := 0; k < len(alphabet); k++ {
		m[alphabet[k]] = byte(k)
	}
	return m
}()

// validSolution reports whether s is 1 to MaxSolutionLen decimal digits
// without leading zeros.
func validSolution(s string) bool {
	if len(s) < 1 || len(s) > MaxSolutionLen || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for k := 0; k < len(s); k++ {
		if s[k] < '0' || s[k] > '9' {
			return false
		}
	}
	return true
}

// meets reports whether sum starts with at least bits zero bits.
func meets(sum [sha256.Size]byte, bits int) bool {
	if bits > 8*len(sum) {
		return false
	}
	k := 0
	for ; bits >= 8; bits -= 8 {
		if sum[k] != 0 {
			return false
		}
		k++
	}
	return bits == 0 || sum[k]>>(8-bits) == 0
}

// progressEvery is how many nonces Solve tries between two looks at its
// context and two progress reports.
const progressEvery = 1 << 14

// Solve finds a solution of token by brute force, for Go clients (load
// generators, tests): it reads the difficulty with Parse (no key needed),
// tries nonces 0, 1, 2, ... and returns the first that meets it. It reports
// the nonces tried so far to progress (when not nil) every 16384 tries,
// and returns ctx's error once ctx is done. It does not check the expiry.
func Solve(ctx context.Context, token string, progress func(tried uint64)) (string, error) {
	c, err := Parse(token)
	if err != nil {
		return "", err
	}
	buf := make([]byte, 0, len(token)+1+MaxSolutionLen)
	buf = append(buf, token...)
	buf = append(buf, ':')
	prefix := len(buf)
	for n := uint64(0); ; n++ {
		if n%progressEvery == 0 && n > 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			if progress != nil {
				progress(n)
			}
		}
		buf = strconv.AppendUint(buf[:prefix], n, 10)
		if meets(sha256.Sum256(buf), c.Difficulty) {
			return string(buf[prefix:]), nil
		}
	}
}

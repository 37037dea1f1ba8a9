package queue

import "math"

// The proof-of-work challenge: before a visitor may join an event's line,
// the event may ask the visitor's browser to find a nonce whose SHA-256,
// with the challenge, starts with a number of zero bits (package challenge
// has the scheme). The difficulty is counted in those leading zero bits:
// each bit doubles the expected work, 2^difficulty hashes on average.

// ChallengeMode says whether, and how hard, an event asks for a
// proof-of-work before a join.
type ChallengeMode string

// Challenge modes.
const (
	// ChallengeOff asks for nothing.
	ChallengeOff ChallengeMode = "off"
	// ChallengeFixed asks every join for the same difficulty.
	ChallengeFixed ChallengeMode = "fixed"
	// ChallengeAdaptive asks for MinDifficulty while the join rate is
	// below JoinsPerSecond, and one bit more for each doubling of the
	// rate above it, up to MaxDifficulty.
	ChallengeAdaptive ChallengeMode = "adaptive"
)

// Limits on a challenge policy.
const (
	// MaxChallengeDifficulty is the hardest challenge an event may ask for,
	// in leading zero bits of SHA-256: the ceiling for an event under
	// attack, not a setting for every day. Measured by scripts/bench-pow.sh
	// (bench/pow.md): headless chromium's SubtleCrypto in one Web Worker
	// tries 70 to 160 thousand nonces a second on the busy 2-core test
	// server, which is what to expect of a mid-range phone, so 2^20 (about
	// a million) expected hashes take 7 to 15 s there, and the unlucky 5%
	// (the number of tries is geometric: three times the mean) half a
	// minute. 18 bits, 2 to 4 s on average, is the most to ask of everyone
	// (so it is the ceiling); a higher one would lock phones out rather than
	// slow bots down, which solve natively at 5 million hashes a second a
	// core (Go).
	MaxChallengeDifficulty = 18
	// DefaultChallengeJoinsPerSecond is an adaptive policy's JoinsPerSecond
	// when it is 0.
	DefaultChallengeJoinsPerSecond = 50
	// MaxChallengeJoinsPerSecond bounds an adaptive policy's
	// JoinsPerSecond.
	MaxChallengeJoinsPerSecond = 1_000_000
	// ChallengeSlack is how many bits below the difficulty in force a
	// solution spent may be (SpendDifficulty): one doubling of the join
	// rate between a challenge's issue and its join.
	ChallengeSlack = 1
)

// ChallengePolicy is an event's proof-of-work policy, as the admin API
// reads and writes it. A nil policy is ChallengeOff.
type ChallengePolicy struct {
	// Mode is ChallengeOff, ChallengeFixed or ChallengeAdaptive. With
	// ChallengeOff the other fields are ignored.
	Mode ChallengeMode `json:"mode"`
	// Difficulty is a fixed policy's difficulty (leading zero bits, 1 to
	// MaxChallengeDifficulty).
	Difficulty int `json:"difficulty,omitempty"`
	// MinDifficulty is an adaptive policy's difficulty at a low join rate
	// (1 to MaxDifficulty).
	MinDifficulty int `json:"minDifficulty,omitempty"`
	// MaxDifficulty is an adaptive policy's ceiling (MinDifficulty to
	// MaxChallengeDifficulty).
	MaxDifficulty int `json:"maxDifficulty,omitempty"`
	// JoinsPerSecond is the join rate at which an adaptive policy's
	// difficulty starts rising above MinDifficulty (0:
	// DefaultChallengeJoinsPerSecond).
	JoinsPerSecond int `json:"joinsPerSecond,omitempty"`
}

// Enabled reports whether p asks joins for a proof-of-work.
func (p *ChallengePolicy) Enabled() bool {
	return p != nil && (p.Mode == ChallengeFixed || p.Mode == ChallengeAdaptive)
}

// Validate reports the first invalid field of p as a CodeInvalidConfig
// error; a nil policy is valid (off).
func (p *ChallengePolicy) Validate() error {
	if p == nil {
		return nil
	}
	switch p.Mode {
	case ChallengeOff:
		return nil
	case ChallengeFixed:
		switch {
		case p.Difficulty < 1 || p.Difficulty > MaxChallengeDifficulty:
			return Errorf(CodeInvalidConfig, "challenge.difficulty must be between 1 and %d (leading zero bits)", MaxChallengeDifficulty)
		case p.MinDifficulty != 0 || p.MaxDifficulty != 0 || p.JoinsPerSecond != 0:
			return Errorf(CodeInvalidConfig, "challenge.minDifficulty, maxDifficulty and joinsPerSecond are for mode %q; mode %q uses difficulty", ChallengeAdaptive, ChallengeFixed)
		}
	case ChallengeAdaptive:
		switch {
		case p.Difficulty != 0:
			return Errorf(CodeInvalidConfig, "challenge.difficulty is for mode %q; mode %q uses minDifficulty and maxDifficulty", ChallengeFixed, ChallengeAdaptive)
		case p.MinDifficulty < 1 || p.MinDifficulty > MaxChallengeDifficulty:
			return Errorf(CodeInvalidConfig, "challenge.minDifficulty must be between 1 and %d (leading zero bits)", MaxChallengeDifficulty)
		case p.MaxDifficulty < p.MinDifficulty || p.MaxDifficulty > MaxChallengeDifficulty:
			return Errorf(CodeInvalidConfig, "challenge.maxDifficulty must be between minDifficulty (%d) and %d", p.MinDifficulty, MaxChallengeDifficulty)
		case p.JoinsPerSecond < 0 || p.JoinsPerSecond > MaxChallengeJoinsPerSecond:
			return Errorf(CodeInvalidConfig, "challenge.joinsPerSecond must be between 1 and %d, or 0 for %d", MaxChallengeJoinsPerSecond, DefaultChallengeJoinsPerSecond)
		}
	default:
		return Errorf(CodeInvalidConfig, "challenge.mode must be %q, %q or %q", ChallengeOff, ChallengeFixed, ChallengeAdaptive)
	}
	return nil
}

// DifficultyAt returns the difficulty p asks of a join when joins arrive at
// joinsPerSecond: 0 when off; Difficulty when fixed; when adaptive,
// MinDifficulty below JoinsPerSecond, and from there one bit more for each
// doubling of the rate (MinDifficulty + floor(log2(rate/JoinsPerSecond)) +
// 1), at most MaxDifficulty. Doubling the rate thus doubles each visitor's
// work, which keeps the work all joiners spend together a second growing
// with the square of the rate.
func (p ChallengePolicy) DifficultyAt(joinsPerSecond float64) int {
	switch p.Mode {
	case ChallengeFixed:
		return p.Difficulty
	case ChallengeAdaptive:
		base := float64(p.JoinsPerSecond)
		if p.JoinsPerSecond <= 0 {
			base = DefaultChallengeJoinsPerSecond
		}
		if !(joinsPerSecond >= base) { // also NaN
			return p.MinDifficulty
		}
		extra := math.Floor(math.Log2(joinsPerSecond/base)) + 1
		if extra >= float64(p.MaxDifficulty-p.MinDifficulty) { // also +Inf
			return p.MaxDifficulty
		}
		return p.MinDifficulty + int(extra)
	}
	return 0
}

// SpendDifficulty is the least difficulty a solution spent while joins
// arrive at joinsPerSecond may have under p: the difficulty in force then
// less ChallengeSlack, never below MinimumDifficulty. A challenge issued a
// moment before the rate doubled passes; one fetched in the calm and kept
// for the surge does not (CodeChallengeTooEasy: ask a fresh one).
func (p ChallengePolicy) SpendDifficulty(joinsPerSecond float64) int {
	return max(p.MinimumDifficulty(), p.DifficultyAt(joinsPerSecond)-ChallengeSlack)
}

// MinimumDifficulty is the least difficulty a solved challenge may have to
// be taken under p: Difficulty when fixed, MinDifficulty when adaptive, 0
// when off. A challenge issued before the policy was raised is refused.
func (p ChallengePolicy) MinimumDifficulty() int {
	switch p.Mode {
	case ChallengeFixed:
		return p.Difficulty
	case ChallengeAdaptive:
		return p.MinDifficulty
	}
	return 0
}

package queue_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/queue"
)

func TestChallengePolicyValidate(t *testing.T) {
	max := queue.MaxChallengeDifficulty
	tests := []struct {
		name string
		p    *queue.ChallengePolicy
		want string // a part of the message; "" for valid
	}{
		{"nil", nil, ""},
		{"off", &queue.ChallengePolicy{Mode: queue.ChallengeOff}, ""},
		{"off ignores the rest", &queue.ChallengePolicy{Mode: queue.ChallengeOff, Difficulty: 99, MinDifficulty: -1}, ""},
		{"fixed", &queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: 16}, ""},
		{"fixed at 1", &queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: 1}, ""},
		{"fixed at the ceiling", &queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: max}, ""},
		{"fixed at 0", &queue.ChallengePolicy{Mode: queue.ChallengeFixed}, "challenge.difficulty must be between 1 and"},
		{"fixed above the ceiling", &queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: max + 1}, "challenge.difficulty must be between 1 and"},
		{"fixed with adaptive bounds", &queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: 10, MaxDifficulty: 12}, "are for mode \"adaptive\""},
		{"fixed with a join rate", &queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: 10, JoinsPerSecond: 5}, "are for mode \"adaptive\""},
		{"adaptive", &queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: 10, MaxDifficulty: 18}, ""},
		{"adaptive with a rate", &queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: 10, MaxDifficulty: 10, JoinsPerSecond: 200}, ""},
		{"adaptive with difficulty", &queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, Difficulty: 10, MinDifficulty: 10, MaxDifficulty: 18}, "challenge.difficulty is for mode \"fixed\""},
		{"adaptive without min", &queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MaxDifficulty: 18}, "challenge.minDifficulty must be between 1 and"},
		{"adaptive min above the ceiling", &queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: max + 1, MaxDifficulty: max + 1}, "challenge.minDifficulty must be between 1 and"},
		{"adaptive min over max", &queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: 12, MaxDifficulty: 10}, "challenge.maxDifficulty must be between minDifficulty (12)"},
		{"adaptive max above the ceiling", &queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: 12, MaxDifficulty: max + 1}, "challenge.maxDifficulty must be between"},
		{"adaptive negative rate", &queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: 1, MaxDifficulty: 2, JoinsPerSecond: -1}, "challenge.joinsPerSecond must be between 1 and"},
		{"adaptive rate too high", &queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: 1, MaxDifficulty: 2, JoinsPerSecond: queue.MaxChallengeJoinsPerSecond + 1}, "challenge.joinsPerSecond must be between 1 and"},
		{"no mode", &queue.ChallengePolicy{Difficulty: 10}, "challenge.mode must be \"off\", \"fixed\" or \"adaptive\""},
		{"unknown mode", &queue.ChallengePolicy{Mode: "hard"}, "challenge.mode must be"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error with %q", err, tc.want)
			case err != nil && queue.ErrorCode(err) != queue.CodeInvalidConfig:
				t.Fatalf("code %q, want %q", queue.ErrorCode(err), queue.CodeInvalidConfig)
			}
		})
	}
}

func TestChallengePolicyEnabled(t *testing.T) {
	tests := []struct {
		p    *queue.ChallengePolicy
		want bool
	}{
		{nil, false},
		{&queue.ChallengePolicy{}, false},
		{&queue.ChallengePolicy{Mode: queue.ChallengeOff, Difficulty: 10}, false},
		{&queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: 10}, true},
		{&queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: 1, MaxDifficulty: 2}, true},
	}
	for _, tc := range tests {
		if got := tc.p.Enabled(); got != tc.want {
			t.Errorf("%+v.Enabled() = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestChallengePolicyDifficultyAt(t *testing.T) {
	fixed := queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: 14}
	adaptive := queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: 10, MaxDifficulty: 14, JoinsPerSecond: 100}
	byDefault := queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: 8, MaxDifficulty: 18} // 50 joins/s
	tests := []struct {
		name string
		p    queue.ChallengePolicy
		rate float64
		want int
	}{
		{"off", queue.ChallengePolicy{Mode: queue.ChallengeOff, Difficulty: 10}, 1e6, 0},
		{"zero policy", queue.ChallengePolicy{}, 10, 0},
		{"fixed idle", fixed, 0, 14},
		{"fixed busy", fixed, 1e9, 14},
		{"adaptive idle", adaptive, 0, 10},
		{"adaptive below the rate", adaptive, 99.9, 10},
		{"adaptive at the rate", adaptive, 100, 11},
		{"adaptive just below double", adaptive, 199, 11},
		{"adaptive at double", adaptive, 200, 12},
		{"adaptive at four times", adaptive, 400, 13},
		{"adaptive at eight times", adaptive, 800, 14},
		{"adaptive clamped", adaptive, 1e6, 14},
		{"adaptive infinite", adaptive, math.Inf(1), 14},
		{"adaptive NaN", adaptive, math.NaN(), 10},
		{"adaptive negative", adaptive, -5, 10},
		{"default rate below", byDefault, 49, 8},
		{"default rate at", byDefault, 50, 9},
		{"default rate at 1600", byDefault, 1600, 14},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.DifficultyAt(tc.rate); got != tc.want {
				t.Fatalf("DifficultyAt(%g) = %d, want %d", tc.rate, got, tc.want)
			}
		})
	}
}

func TestChallengePolicyMinimumDifficulty(t *testing.T) {
	tests := []struct {
		p    queue.ChallengePolicy
		want int
	}{
		{queue.ChallengePolicy{Mode: queue.ChallengeOff, Difficulty: 5}, 0},
		{queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: 12}, 12},
		{queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: 9, MaxDifficulty: 15}, 9},
	}
	for _, tc := range tests {
		if got := tc.p.MinimumDifficulty(); got != tc.want {
			t.Errorf("%+v.MinimumDifficulty() = %d, want %d", tc.p, got, tc.want)
		}
	}
}

func TestChallengePolicyJSON(t *testing.T) {
	p := queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: 10, MaxDifficulty: 18, JoinsPerSecond: 200}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"mode":"adaptive","minDifficulty":10,"maxDifficulty":18,"joinsPerSecond":200}`
	if string(b) != want {
		t.Fatalf("JSON %s, want %s", b, want)
	}
	var got queue.ChallengePolicy
	if err := json.Unmarshal([]byte(`{"mode":"fixed","difficulty":16}`), &got); err != nil || got != (queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: 16}) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
}

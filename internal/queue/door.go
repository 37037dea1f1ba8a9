package queue

import (
	"context"
	"time"
)

// The door: what a visitor must show before a join takes a place, in this
// order: who they are (a visitor identity waitq issued, a join token the
// shop signed, or X-User-Id from a trusted proxy), and, when the event asks
// for one, the solution of a proof-of-work challenge. One-time proofs (a
// challenge's solution, a one-time join token) are spent once a join that
// carried them is acknowledged.

// SpendKind says what a spent one-time proof was.
type SpendKind string

// Kinds of one-time proofs.
const (
	// SpendChallenge is a solved challenge, by its id.
	SpendChallenge SpendKind = "c"
	// SpendJoinToken is a one-time join token, by its jti.
	SpendJoinToken SpendKind = "j"
)

// Spend is one one-time proof a join carries: spent, it is refused again
// until it would have expired anyway.
type Spend struct {
	Kind  SpendKind
	ID    string
	Until time.Time
}

// Member is the spend's name in the store.
func (s Spend) Member() string { return string(s.Kind) + ":" + s.ID }

// DoorStats are an event's door counters, shared by every producer-api
// replica: challenges issued, solved (a join acknowledged with the
// solution) and refused, and the joins a second that the adaptive
// difficulty follows.
type DoorStats struct {
	ChallengesIssued  int64 `json:"challengesIssued"`
	ChallengesSolved  int64 `json:"challengesSolved"`
	ChallengesRefused int64 `json:"challengesRefused"`
	// JoinsPerSecond is the event's rate of joins that passed the door,
	// over the last ten seconds or so.
	JoinsPerSecond float64 `json:"joinsPerSecond"`
	// Difficulty is the challenge difficulty in force (leading zero bits;
	// 0: no challenge).
	Difficulty int `json:"difficulty"`
}

// DoorStore keeps an event's spent one-time proofs and door counters:
// what producer-api's door needs of the live state.
type DoorStore interface {
	// Spend marks every spend as used, all or none, in one atomic step
	// with one round trip, and counts a join through the door (and a
	// challenge solved when one of them is a challenge). It returns the
	// member of the first one already spent ("" when none was, and then
	// all are marked), or ErrEventNotFound.
	Spend(ctx context.Context, eventID string, spends []Spend, now time.Time) (used string, err error)
	// Unspend gives spends back: the join that carried them was not
	// acknowledged, so the visitor may send them again.
	Unspend(ctx context.Context, eventID string, spends []Spend) error
	// ChallengeIssued counts a challenge issued and returns the door's
	// counters (its join rate drives the adaptive difficulty), in one
	// round trip.
	ChallengeIssued(ctx context.Context, eventID string, now time.Time) (DoorStats, error)
	// ChallengeRefused counts a refused solution.
	ChallengeRefused(ctx context.Context, eventID string) error
	// DoorStats reads the door's counters.
	DoorStats(ctx context.Context, eventID string, now time.Time) (DoorStats, error)
}

package producer

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// ChallengeResponse is the body of POST /v1/events/{eventId}/challenge.
type ChallengeResponse struct {
	// Required is false when the event asks for no challenge: join at once.
	Required bool `json:"required"`
	// Challenge is the token to solve (package challenge's scheme).
	Challenge string `json:"challenge,omitempty"`
	// Difficulty is the leading zero bits a solution's SHA-256 needs.
	Difficulty int `json:"difficulty,omitempty"`
	// ExpiresAt is when the challenge ends (unix ms).
	ExpiresAt int64 `json:"expiresAt,omitempty"`
}

// JoinBody is the optional body of a join: the solved challenge of an
// event that asks for one.
type JoinBody struct {
	Challenge string `json:"challenge"`
	Solution  string `json:"solution"`
}

// issueChallenge answers POST /v1/events/{eventId}/challenge: a challenge
// bound to the event and to who asks (identify), at the difficulty in
// force (adaptive: the door's join rate).
func (s *Server) issueChallenge(c echo.Context) error {
	ev, id, err := s.queueRequest(c)
	if err != nil {
		return err
	}
	if !ev.Challenge.Enabled() {
		return c.JSON(http.StatusOK, ChallengeResponse{})
	}
	now := s.now()
	st, err := s.door.ChallengeIssued(c.Request().Context(), ev.ID, now)
	if err != nil {
		return s.storeError("count a challenge", err)
	}
	s.rates.put(ev.ID, st.JoinsPerSecond, now)
	ch, err := s.challenges.Issue(ev.ID, id.user, ev.Challenge.DifficultyAt(st.JoinsPerSecond), s.cfg.ChallengeTTL)
	if err != nil {
		return err
	}
	s.metrics.challenges.WithLabelValues("issued").Inc()
	return c.JSON(http.StatusOK, ChallengeResponse{
		Required: true, Challenge: ch.Token, Difficulty: ch.Difficulty, ExpiresAt: ch.ExpiresAt.UnixMilli(),
	})
}

// passDoor checks what a join shows beyond its identity (the solution of
// the event's challenge) and spends its one-time proofs, all or none; it
// returns them, to give back (unspend) when the join is not acknowledged.
func (s *Server) passDoor(c echo.Context, ev queue.Event, id identity) ([]queue.Spend, error) {
	var spends []queue.Spend
	if id.token != nil {
		spends = append(spends, *id.token)
	}
	if ev.Challenge.Enabled() {
		sp, err := s.checkSolution(c, ev, id)
		if err != nil {
			return nil, err
		}
		spends = append(spends, sp)
	}
	if len(spends) == 0 {
		return nil, nil
	}
	used, err := s.door.Spend(c.Request().Context(), ev.ID, spends, s.now())
	switch {
	case errors.Is(err, queue.ErrEventNotFound):
		return nil, queue.Errorf(queue.CodeEventNotFound, "event %s does not exist", ev.ID)
	case err != nil:
		return nil, s.storeError("spend "+ev.ID, err)
	case strings.HasPrefix(used, string(queue.SpendChallenge)+":"):
		s.metrics.challenges.WithLabelValues("replayed").Inc()
		return nil, queue.Errorf(queue.CodeChallengeUsed, "this challenge's solution was used by a join already: ask for a new challenge")
	case used != "":
		return nil, queue.Errorf(queue.CodeJoinTokenUsed, "this one-time join token was used by a join already")
	}
	return spends, nil
}

// checkSolution verifies the join body's challenge and solution for ev and
// id at the event's least difficulty, and an adaptive event's challenge
// against the difficulty in force now (SpendDifficulty), counting a
// refusal.
func (s *Server) checkSolution(c echo.Context, ev queue.Event, id identity) (queue.Spend, error) {
	var body JoinBody
	// The body is optional: absent, the join carries no solution.
	br := bufio.NewReader(c.Request().Body)
	if _, err := br.Peek(1); err == nil {
		if err := httpkit.DecodeJSON(br, &body, queue.CodeInvalidBody, `{"challenge":…,"solution":…}`); err != nil {
			return queue.Spend{}, err
		}
	}
	if body.Challenge == "" || body.Solution == "" {
		return queue.Spend{}, queue.Errorf(queue.CodeChallengeRequired, "event %s asks for a solved challenge: POST /v1/events/%s/challenge, solve it, and join with {\"challenge\",\"solution\"}", ev.ID, ev.ID)
	}
	ch, err := s.challenges.Verify(body.Challenge, body.Solution, ev.ID, id.user, ev.Challenge.MinimumDifficulty())
	if err == nil && ev.Challenge.Mode == queue.ChallengeAdaptive {
		err = s.checkSpendDifficulty(c.Request().Context(), ev, ch.Difficulty)
	}
	if err != nil {
		s.metrics.challenges.WithLabelValues("refused").Inc()
		if err := s.door.ChallengeRefused(c.Request().Context(), ev.ID); err != nil {
			s.log.Warn("count a refused challenge", "event", ev.ID, "err", err)
		}
		return queue.Spend{}, err
	}
	return queue.Spend{Kind: queue.SpendChallenge, ID: ch.ID, Until: ch.ExpiresAt}, nil
}

// checkSpendDifficulty refuses a solution of difficulty bits to adaptive
// ev when the join rate now asks more (queue.ChallengePolicy.SpendDifficulty):
// a challenge fetched in the calm is not spent in the surge. The rate is
// the door's, read at most once per EventCacheTTL per event.
func (s *Server) checkSpendDifficulty(ctx context.Context, ev queue.Event, difficulty int) error {
	rate, err := s.rates.get(ctx, ev.ID, s.now())
	if err != nil {
		return s.storeError("read the join rate of "+ev.ID, err)
	}
	if need := ev.Challenge.SpendDifficulty(rate); difficulty < need {
		return queue.Errorf(queue.CodeChallengeTooEasy, "the challenge asks %d bits, and joins now need at least %d: ask for a new challenge", difficulty, need)
	}
	return nil
}

// doorRates keeps each event's join rate as the door last read it, for
// checkSpendDifficulty: one Redis read per event per ttl, not per join.
type doorRates struct {
	door queue.DoorStore
	ttl  time.Duration
	mu   sync.Mutex
	m    map[string]doorRate
}

type doorRate struct {
	perSecond float64
	at        time.Time
}

func newDoorRates(door queue.DoorStore, ttl time.Duration) *doorRates {
	return &doorRates{door: door, ttl: ttl, m: map[string]doorRate{}}
}

// get returns eventID's join rate, read again when older than the ttl.
func (r *doorRates) get(ctx context.Context, eventID string, now time.Time) (float64, error) {
	r.mu.Lock()
	e, ok := r.m[eventID]
	r.mu.Unlock()
	if ok && now.Sub(e.at) < r.ttl && !now.Before(e.at) {
		return e.perSecond, nil
	}
	st, err := r.door.DoorStats(ctx, eventID, now)
	if err != nil {
		return 0, err
	}
	r.put(eventID, st.JoinsPerSecond, now)
	return st.JoinsPerSecond, nil
}

// put remembers eventID's join rate read at now.
func (r *doorRates) put(eventID string, perSecond float64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.m) >= maxDoorRates {
		clear(r.m) // events come and go: never more than a bounded map
	}
	r.m[eventID] = doorRate{perSecond: perSecond, at: now}
}

// maxDoorRates bounds the events doorRates keeps.
const maxDoorRates = 4096

package producer

import (
	"bufio"
	"errors"
	"net/http"
	"strings"

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
// id at the event's least difficulty, counting a refusal.
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
	if err != nil {
		s.metrics.challenges.WithLabelValues("refused").Inc()
		if err := s.door.ChallengeRefused(c.Request().Context(), ev.ID); err != nil {
			s.log.Warn("count a refused challenge", "event", ev.ID, "err", err)
		}
		return queue.Spend{}, err
	}
	return queue.Spend{Kind: queue.SpendChallenge, ID: ch.ID, Until: ch.ExpiresAt}, nil
}

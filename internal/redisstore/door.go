package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
)

var _ queue.DoorStore = (*Store)(nil)

// doorWindow is the join-rate window of the door (spend.lua): the rate is
// read over the current window and the one before.
const doorWindow = 10 * time.Second

// SpentKeep is how long past its end a spent proof is still kept: the
// most two producer-api replicas' clocks may differ. Each replica takes a
// proof until its end by its own clock, so one whose clock runs ahead must
// not drop a proof that another, behind it, would still take as unspent.
const SpentKeep = time.Minute

// Spend implements queue.DoorStore with spend.lua.
func (s *Store) Spend(ctx context.Context, eventID string, spends []queue.Spend, now time.Time) (string, error) {
	challenge := "0"
	args := make([]any, 0, 4+2*len(spends))
	for _, sp := range spends {
		if sp.Kind == queue.SpendChallenge {
			challenge = "1"
		}
	}
	args = append(args, now.UnixMilli(), doorWindow.Milliseconds(), challenge, SpentKeep.Milliseconds())
	for _, sp := range spends {
		args = append(args, sp.Member(), sp.Until.UnixMilli())
	}
	keys := []string{ConfigKey(eventID), SpentKey(eventID), DoorKey(eventID)}
	v, err := runScript(ctx, s.c, spendScript, keys, args...).Result()
	if err != nil {
		return "", fmt.Errorf("redisstore: spend %s: %w", eventID, err)
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case int64:
		switch v {
		case codeOK:
			return "", nil
		case codeNoEvent:
			return "", queue.ErrEventNotFound
		}
	}
	return "", fmt.Errorf("redisstore: spend %s: unexpected reply %v", eventID, v)
}

// Unspend implements queue.DoorStore.
func (s *Store) Unspend(ctx context.Context, eventID string, spends []queue.Spend) error {
	if len(spends) == 0 {
		return nil
	}
	members := make([]any, len(spends))
	for i, sp := range spends {
		members[i] = sp.Member()
	}
	if err := s.c.ZRem(ctx, SpentKey(eventID), members...).Err(); err != nil {
		return fmt.Errorf("redisstore: unspend %s: %w", eventID, err)
	}
	return nil
}

// ChallengeIssued implements queue.DoorStore: one pipeline counts the
// challenge and reads the counters.
func (s *Store) ChallengeIssued(ctx context.Context, eventID string, now time.Time) (queue.DoorStats, error) {
	var read *redis.SliceCmd
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HIncrBy(ctx, DoorKey(eventID), "issued", 1)
		read = p.HMGet(ctx, DoorKey(eventID), doorFields...)
		return nil
	})
	if err != nil {
		return queue.DoorStats{}, fmt.Errorf("redisstore: challenge issued %s: %w", eventID, err)
	}
	return doorStats(read.Val(), now), nil
}

// ChallengeRefused implements queue.DoorStore.
func (s *Store) ChallengeRefused(ctx context.Context, eventID string) error {
	if err := s.c.HIncrBy(ctx, DoorKey(eventID), "refused", 1).Err(); err != nil {
		return fmt.Errorf("redisstore: challenge refused %s: %w", eventID, err)
	}
	return nil
}

// DoorStats implements queue.DoorStore.
func (s *Store) DoorStats(ctx context.Context, eventID string, now time.Time) (queue.DoorStats, error) {
	v, err := s.c.HMGet(ctx, DoorKey(eventID), doorFields...).Result()
	if err != nil {
		return queue.DoorStats{}, fmt.Errorf("redisstore: door stats %s: %w", eventID, err)
	}
	return doorStats(v, now), nil
}

// doorFields are the door HASH's fields doorStats reads, in its order.
var doorFields = []string{"issued", "solved", "refused", "w", "n", "prev"}

// doorStats reads the door HASH's fields (doorFields): the join rate is the
// current window's joins plus the part of the window before that the
// sliding window still covers, over one window.
func doorStats(v []any, now time.Time) queue.DoorStats {
	num := func(i int) int64 {
		s, _ := v[i].(string)
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	st := queue.DoorStats{ChallengesIssued: num(0), ChallengesSolved: num(1), ChallengesRefused: num(2)}
	win := doorWindow.Milliseconds()
	window, n, prev := num(3), num(4), num(5)
	cur := now.UnixMilli() / win
	switch window {
	case cur:
	case cur - 1:
		prev, n = n, 0
	default:
		prev, n = 0, 0
	}
	elapsed := float64(now.UnixMilli()%win) / float64(win)
	st.JoinsPerSecond = (float64(prev)*(1-elapsed) + float64(n)) / doorWindow.Seconds()
	return st
}

package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
)

var _ queue.ResumeStore = (*Store)(nil)

// Holding returns the place userID holds in eventID: waiting in line, or
// called (queue.ResumeStore).
func (s *Store) Holding(ctx context.Context, eventID, userID string) (queue.Held, error) {
	k := keysOf(eventID)
	var score, window *redis.FloatCmd
	var place *redis.StringCmd
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		score = p.ZScore(ctx, k.waiting, userID)
		window = p.ZScore(ctx, k.called, userID)
		place = p.HGet(ctx, k.callplaces, userID)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return queue.Held{}, fmt.Errorf("redisstore: place of %s in %s: %w", userID, eventID, err)
	}
	if v, err := score.Result(); err == nil {
		return queue.Held{Score: int64(v)}, nil
	}
	end, err1 := window.Result()
	at, err2 := place.Int64()
	if err1 == nil && err2 == nil {
		return queue.Held{Score: at, ClaimUntil: int64(end)}, nil
	}
	return queue.Held{}, queue.ErrNoPlace
}

// Move moves the place m's link binds to m.To, in one step (move.lua;
// queue.ResumeStore). It records nothing: package recording does.
func (s *Store) Move(ctx context.Context, m queue.Move) (queue.Moved, error) {
	ev := m.Resume.EventID
	k := keysOf(ev)
	keys := []string{k.config, k.waiting, k.holders, k.seen, k.served, k.unrecorded, k.called, k.callplaces, k.claims, k.moved, k.resumes, k.journal}
	v, err := runScript(ctx, s.c, moveScript, keys, m.NowMs, m.Resume.UserID, m.To, m.Resume.Place, m.Resume.Nonce,
		m.Resume.Expires, SpentKeep.Milliseconds()).Result()
	if err != nil {
		return queue.Moved{}, fmt.Errorf("redisstore: move in %s: %w", ev, err)
	}
	moved, err := decodeMoveReply(v)
	if err != nil {
		return queue.Moved{}, fmt.Errorf("redisstore: move in %s: %w", ev, err)
	}
	return moved, nil
}

// decodeMoveReply reads move.lua's reply (its header's "Returns").
func decodeMoveReply(v any) (queue.Moved, error) {
	if code, ok := v.(int64); ok {
		switch code {
		case codeNoEvent:
			return queue.Moved{}, queue.ErrEventNotFound
		case codeRebuilding:
			return queue.Moved{}, queue.ErrRebuilding
		case codeResumeUsed:
			return queue.Moved{}, queue.Errorf(queue.CodeResumeUsed, "this resume link was used already: a link works once")
		case codePlaceChanged:
			return queue.Moved{}, queue.Errorf(queue.CodePlaceChanged, "the place this link carries is no longer held (admitted, lapsed, removed, or left and joined again since)")
		case codeAlreadyQueued:
			return queue.Moved{}, queue.Errorf(queue.CodeAlreadyQueued, "this browser already has a place or a slot in this event: leave it first")
		}
		return queue.Moved{}, fmt.Errorf("unexpected move reply %d", code)
	}
	l, ok := v.([]any)
	if !ok || len(l) != 5 {
		return queue.Moved{}, fmt.Errorf("unexpected move reply %v", v)
	}
	kind, _ := l[0].(string)
	var n [4]int64
	for i := range n {
		if n[i], ok = l[i+1].(int64); !ok {
			return queue.Moved{}, fmt.Errorf("unexpected move reply %v", v)
		}
	}
	m := queue.Moved{Same: kind == "same", Again: kind == "again", Score: n[0], ClaimUntil: n[1], Served: n[2], At: n[3]}
	if kind != "same" && kind != "again" && kind != "moved" {
		return queue.Moved{}, fmt.Errorf("unexpected move reply %v", v)
	}
	return m, nil
}

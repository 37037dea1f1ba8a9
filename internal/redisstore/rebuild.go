package redisstore

import (
	"context"
	"fmt"
	"maps"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
)

// rebuildChunk is the most members one ZADD of a rebuild writes.
const rebuildChunk = 1000

// BeginRebuild marks eventID as being rebuilt (config.rebuilding = nowMs),
// creating the config hash if Redis lost it: from now on its admission,
// sweeps and releases stop, the consumer holds its messages and statuses
// say rebuilding, until EndRebuild.
func (s *Store) BeginRebuild(ctx context.Context, eventID string, nowMs int64) error {
	if err := s.c.HSet(ctx, ConfigKey(eventID), "rebuilding", nowMs).Err(); err != nil {
		return fmt.Errorf("redisstore: begin rebuild of %s: %w", eventID, err)
	}
	return nil
}

// WriteRebuilt replaces the event's configuration, line, holds, served
// stamps, pre-queue and admission counters with st (its presence and
// unrecorded holders are dropped: they are not in the log), and registers the
// event. The rebuild mark stays: EndRebuild removes it. The rate's token
// bucket restarts empty at nowMs, so the rebuild adds no burst.
func (s *Store) WriteRebuilt(ctx context.Context, st queue.Rebuilt, nowMs int64) error {
	ev := st.Event.ID
	plain := *s
	plain.recorder = nil // the configuration came from the log
	if _, err := plain.PutEvent(ctx, st.Event); err != nil {
		return fmt.Errorf("redisstore: rebuild %s: %w", ev, err)
	}
	k := keysOf(ev)
	p := s.c.Pipeline()
	p.Del(ctx, k.waiting, k.active, k.served, k.prequeue, k.seen, k.unrecorded)
	p.HDel(ctx, k.stats, "admittedMaxScore")
	p.HSet(ctx, k.stats, "admittedTotal", st.AdmittedTotal, "tokens", 0, "tokensAt", nowMs)
	if st.AdmittedTotal > 0 {
		p.HSet(ctx, k.stats, "admittedMaxScore", st.AdmittedMaxScore)
	}
	for key, m := range map[string]map[string]int64{k.waiting: st.Waiting, k.active: st.Active, k.served: st.Served, k.prequeue: st.Prequeue} {
		zs := make([]redis.Z, 0, rebuildChunk)
		for user, score := range maps.All(m) {
			zs = append(zs, redis.Z{Score: float64(score), Member: user})
			if len(zs) == rebuildChunk {
				p.ZAdd(ctx, key, zs...)
				zs = make([]redis.Z, 0, rebuildChunk)
			}
			if p.Len() >= 100 {
				if _, err := p.Exec(ctx); err != nil {
					return fmt.Errorf("redisstore: rebuild %s: %w", ev, err)
				}
			}
		}
		if len(zs) > 0 {
			p.ZAdd(ctx, key, zs...)
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("redisstore: rebuild %s: %w", ev, err)
	}
	return nil
}

// EndRebuild removes eventID's rebuild mark: admission, sweeps, releases
// and ingest resume.
func (s *Store) EndRebuild(ctx context.Context, eventID string) error {
	if err := s.c.HDel(ctx, ConfigKey(eventID), "rebuilding").Err(); err != nil {
		return fmt.Errorf("redisstore: end rebuild of %s: %w", eventID, err)
	}
	return nil
}

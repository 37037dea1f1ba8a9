package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
)

// The events' series (queue.SeriesSample): the slot monitor samples, the
// admin API reads.

// SampleSeries takes the sample of nowMs's period of each of eventIDs that
// has none yet (series.lua), all in one round trip.
func (s *Store) SampleSeries(ctx context.Context, eventIDs []string, nowMs int64) error {
	if len(eventIDs) == 0 {
		return nil
	}
	calls := make([]scriptCall, 0, len(eventIDs))
	for _, id := range eventIDs {
		keys := append(keysOf(id).admission(), SeriesKey(id))
		calls = append(calls, scriptCall{seriesScript, keys, []any{nowMs, queue.SeriesPeriodMs, queue.SeriesSpanMs, queue.SeriesSignalTimeoutMs}})
	}
	if _, err := s.pipeline(ctx, calls); err != nil {
		return fmt.Errorf("redisstore: sample series of %d events: %w", len(eventIDs), err)
	}
	return nil
}

// Series returns id's samples of the last queue.SeriesSpanMs before nowMs,
// oldest first, with their admissions a minute (queue.WithRates): one
// ZRANGE.
func (s *Store) Series(ctx context.Context, id string, nowMs int64) ([]queue.SeriesSample, error) {
	members, err := s.c.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: SeriesKey(id), ByScore: true,
		Start: "(" + strconv.FormatInt(nowMs-queue.SeriesSpanMs, 10), Stop: "+inf",
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: series %s: %w", id, err)
	}
	out := make([]queue.SeriesSample, 0, len(members))
	for _, m := range members {
		var smp queue.SeriesSample
		if err := json.Unmarshal([]byte(m), &smp); err != nil {
			return nil, fmt.Errorf("redisstore: series %s: corrupt sample %q: %w", id, m, err)
		}
		out = append(out, smp)
	}
	return queue.WithRates(out), nil
}

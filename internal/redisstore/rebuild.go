package redisstore

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
)

// rebuildChunk is the most members one ZADD of a rebuild writes.
const rebuildChunk = 1000

// BeginRebuild marks eventID as being rebuilt (config.rebuilding = nowMs),
// creating the config hash if Redis lost it: from now on its admission,
// sweeps and releases stop, the consumer holds its messages and statuses
// say rebuilding, until EndRebuild. An event deleted whose log is still to
// delete (its tombstone stands) is not brought back: nothing is marked and
// it returns ErrLogNotDeleted.
func (s *Store) BeginRebuild(ctx context.Context, eventID string, nowMs int64) error {
	tomb := TombstoneKey(eventID)
	mark := func(tx *redis.Tx) error {
		dead, err := tx.Exists(ctx, tomb).Result()
		if err != nil {
			return err
		}
		if dead > 0 {
			return queue.ErrLogNotDeleted
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, ConfigKey(eventID), "rebuilding", nowMs)
			return nil
		})
		return err
	}
	if err := s.c.Watch(ctx, mark, tomb); err != nil {
		return fmt.Errorf("redisstore: begin rebuild of %s: %w", eventID, err)
	}
	return nil
}

// noShowsFrom is where a rebuild starts looking for no-shows (tick.lua's
// noShowCheckedTo): past every hold it restores. Arrivals are not in the
// log, so a holder it restores may be in the shop without an arrival Redis
// still knows of: none is freed as a no-show (the monitor looks only at
// admissions made after the rebuild, or renewed by it).
func noShowsFrom(active map[string]int64) int64 {
	var last int64
	for _, end := range active {
		last = max(last, end)
	}
	return last
}

// WriteRebuilt replaces the event's configuration (unless the one stored
// is newer: stamped after the log's latest config record), a chain draw's
// freeze and draw, line, holds, served
// stamps, visits, pre-queue, called and lapsed turns, moved places, admission counters, item holds and sales with st (its presence is
// dropped: it is not in the log), sets the applied offsets (OffsetsKey) to
// the ends the fold read (st.Ends), and registers the event. The rebuild
// mark stays: EndRebuild removes it. The rate's token bucket restarts
// empty at nowMs, so the rebuild adds no burst.
//
// The unrecorded holders still holding at nowMs are kept, holding and
// unrecorded (keepUnrecorded): admitted before the mark, their records
// may lie past the end the rebuild read, and nobody was told of them.
// The holds released whose release records may lie past it stay released
// (keepFreeing), their slots counted in freeing, which the rebuild keeps.
func (s *Store) WriteRebuilt(ctx context.Context, st queue.Rebuilt, nowMs int64) error {
	ev := st.Event.ID
	unrecorded, err := s.keepUnrecorded(ctx, &st, nowMs)
	if err != nil {
		return fmt.Errorf("redisstore: rebuild %s: %w", ev, err)
	}
	if err := s.keepFreeing(ctx, &st, nowMs); err != nil {
		return fmt.Errorf("redisstore: rebuild %s: %w", ev, err)
	}
	if err := s.writeRebuiltConfig(ctx, st); err != nil {
		return fmt.Errorf("redisstore: rebuild %s: %w", ev, err)
	}
	k := keysOf(ev)
	p := s.c.Pipeline()
	p.Unlink(ctx, k.waiting, k.holders, k.served, k.prequeue, k.seen, k.unrecorded, k.offsets, k.joinKeys, // freed in the background: a line of millions
		k.called, k.callplaces, k.claims, k.lapsed, k.moved)
	for part, end := range st.Ends {
		if end > 0 {
			p.HSet(ctx, k.offsets, part, end-1) // folded: the consumer applies only what lies past it
		}
	}
	// A chain draw's freeze and draw as the log holds them (a step Redis
	// made whose record the log lacks was never told: it is made again).
	p.HDel(ctx, k.config, chainFields...)
	if h := chainHash(st.Event.Chain); h != nil {
		p.HSet(ctx, k.config, h...)
	}
	p.HDel(ctx, k.stats, "admittedMaxScore")
	p.HSet(ctx, k.stats, "admittedTotal", st.AdmittedTotal, "tokens", 0, "tokensAt", nowMs, "noShowCheckedTo", noShowsFrom(st.Holders))
	if st.AdmittedTotal > 0 {
		p.HSet(ctx, k.stats, "admittedMaxScore", st.AdmittedMaxScore)
	}
	for key, m := range map[string]map[string]int64{k.waiting: st.Waiting, k.holders: st.Holders, k.served: st.Served, k.prequeue: st.Prequeue,
		k.called: st.Called, k.lapsed: st.Lapsed, k.moved: st.Moved} {
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
	if len(unrecorded) > 0 {
		p.ZAdd(ctx, k.unrecorded, unrecorded...)
	}
	digests := make(map[string]string, len(st.JoinKeys))
	for user, key := range st.JoinKeys {
		digests[user] = JoinKeyDigest(key)
	}
	hsetAll(ctx, p, k.joinKeys, digests)
	places := make(map[string]string, len(st.CallPlaces))
	for user, place := range st.CallPlaces {
		places[user] = strconv.FormatInt(place, 10)
	}
	hsetAll(ctx, p, k.callplaces, places)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("redisstore: rebuild %s: %w", ev, err)
	}
	if err := s.writeHolds(ctx, st, nowMs); err != nil {
		return fmt.Errorf("redisstore: rebuild %s: holds: %w", ev, err)
	}
	return nil
}

// writeRebuiltConfig writes st's configuration unless the one stored is
// newer, and registers the event.
func (s *Store) writeRebuiltConfig(ctx context.Context, st queue.Rebuilt) error {
	ev := st.Event.ID
	stored, err := s.c.HMGet(ctx, ConfigKey(ev), "capacity", "configuredAt").Result()
	if err != nil {
		return err
	}
	at, _ := stored[1].(string)
	if storedAt, _ := strconv.ParseInt(at, 10, 64); stored[0] != nil && storedAt > st.ConfiguredAt {
		// An admin change stored before the mark whose record lies past
		// the end read (PUTs are refused from the mark on): it stays.
		return s.c.SAdd(ctx, EventsKey, ev).Err()
	}
	// The configuration came from the log: written, not recorded.
	_, _, err = s.putEvent(ctx, st.Event, max(st.ConfiguredAt, 1))
	return err
}

// hsetAll queues the HSETs of m's fields into key on p, rebuildChunk
// fields a command.
func hsetAll(ctx context.Context, p redis.Pipeliner, key string, m map[string]string) {
	fields := make([]any, 0, 2*rebuildChunk)
	for field, value := range maps.All(m) {
		if fields = append(fields, field, value); len(fields) == 2*rebuildChunk {
			p.HSet(ctx, key, fields...)
			fields = make([]any, 0, 2*rebuildChunk)
		}
	}
	if len(fields) > 0 {
		p.HSet(ctx, key, fields...)
	}
}

// keepUnrecorded adds to st the event's unrecorded holders whose hold is
// still ahead at nowMs, and returns them as the unrecorded set to write
// back. Each was admitted live before the rebuild's mark (admission stops
// at the mark) and nobody was told (mark_recorded.lua refuses while the
// event is rebuilt); its record, when written, may lie past the end the
// rebuild read. So it keeps its stay and served mark and leaves the line,
// its admission counts once (not again when the log held its record), and
// it stays unrecorded: a monitor tick records it after the rebuild and
// tells it. Nothing changes these keys while the mark stands.
func (s *Store) keepUnrecorded(ctx context.Context, st *queue.Rebuilt, nowMs int64) ([]redis.Z, error) {
	k := keysOf(st.Event.ID)
	zs, err := s.c.ZRangeWithScores(ctx, k.unrecorded, 0, -1).Result()
	if err != nil || len(zs) == 0 {
		return nil, err
	}
	ids := make([]string, len(zs))
	for i, z := range zs {
		ids[i], _ = z.Member.(string)
	}
	holds, err := s.c.ZMScore(ctx, k.holders, ids...).Result()
	if err != nil {
		return nil, err
	}
	served, err := s.c.ZMScore(ctx, k.served, ids...).Result()
	if err != nil {
		return nil, err
	}
	st.Waiting, st.Holders, st.Served = maps.Clone(st.Waiting), maps.Clone(st.Holders), maps.Clone(st.Served)
	var keep []redis.Z
	for i, u := range ids {
		hold, mark := int64(holds[i]), int64(served[i])
		if hold <= nowMs {
			continue // ended: never told, it is as the log says
		}
		keep = append(keep, zs[i])
		if st.Holders[u] < hold {
			st.Holders[u] = hold
		}
		if recorded, ok := st.Served[u]; !ok || recorded < mark {
			st.Served[u] = mark
			if place, waiting := st.Waiting[u]; waiting && (st.AdmittedTotal == 0 || place > st.AdmittedMaxScore) {
				st.AdmittedMaxScore = place
			}
			st.AdmittedTotal++
		}
		delete(st.Waiting, u)
	}
	return keep, nil
}

// keepFreeing takes out of st the holds released live whose release
// record the log read may lack (the event's freeing members, release.lua):
// the user gave the slot back, and it stays counted in freeing (which the
// rebuild keeps) until the record is written. Only the admission the
// member names (its served mark) is taken out, with its item holds.
func (s *Store) keepFreeing(ctx context.Context, st *queue.Rebuilt, nowMs int64) error {
	members, err := s.c.ZRangeByScore(ctx, keysOf(st.Event.ID).freeing, &redis.ZRangeBy{Min: "(" + strconv.FormatInt(nowMs, 10), Max: "+inf"}).Result()
	if err != nil || len(members) == 0 {
		return err
	}
	st.Holders, st.Holds = maps.Clone(st.Holders), maps.Clone(st.Holds)
	for _, member := range members {
		m, err := freeingRelease(st.Event.ID, member, nowMs)
		if err != nil {
			return err
		}
		if _, held := st.Holders[m.UserID]; !held || st.Served[m.UserID] != m.ServedMark {
			continue
		}
		delete(st.Holders, m.UserID)
		maps.DeleteFunc(st.Holds, func(_ string, h queue.Hold) bool { return h.UserID == m.UserID })
	}
	return nil
}

// EndRebuild removes eventID's rebuild mark: admission, sweeps, releases
// and ingest resume. In the same step it deletes the line's journal: the
// rebuild wrote the line without noting it, so the gateways, seeing a new
// epoch, read every place again (a place read while the rebuild wrote is
// of the epoch deleted here).
func (s *Store) EndRebuild(ctx context.Context, eventID string) error {
	_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HDel(ctx, ConfigKey(eventID), "rebuilding")
		p.Del(ctx, JournalKey(eventID))
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: end rebuild of %s: %w", eventID, err)
	}
	return nil
}

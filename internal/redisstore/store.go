package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
)

// DefaultURL is the Redis every service uses when none is configured.
const DefaultURL = "redis://127.0.0.1:6379/0"

// Store is waitq's live state in Redis.
type Store struct {
	c redis.UniversalClient
	// fastTrack is the most users a join batch or a release admits at once
	// (0: only the slot monitor admits).
	fastTrack int
	draws     *drawCache
	lasts     *lineLasts
}

// Store implements the ports of package queue that need the live state.
var (
	_ queue.EventStore   = (*Store)(nil)
	_ queue.GatewayStore = (*Store)(nil)
	_ queue.IngestStore  = (*Store)(nil)
	_ queue.RebuildStore = (*Store)(nil)
	_ queue.StepStore    = (*Store)(nil)
)

// Options are a Store's settings besides its client. The zero Options are
// a Store that only the slot monitor's Tick admits through. A Store records
// nothing: package recording wraps it for that (queue.StepStore).
type Options struct {
	// FastTrack is the most users a join batch or a release admits at once
	// while there is room (0: only the slot monitor's Tick admits).
	FastTrack int
}

// Validate reports the options that cannot work.
func (o Options) Validate() error {
	if o.FastTrack < 0 {
		return fmt.Errorf("redisstore: fast track %d must not be negative (0: off)", o.FastTrack)
	}
	return nil
}

// New returns a Store over c with o, or an error when o is not valid. It
// does not contact the server. Stores over one client share it: closing
// one closes the client.
func New(c redis.UniversalClient, o Options) (*Store, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Store{c: c, fastTrack: o.FastTrack, draws: newDrawCache(), lasts: newLineLasts()}, nil
}

// Dial parses a redis:// URL and returns a Store with a client of that one
// server (Conn.Client) and the zero Options.
func Dial(ctx context.Context, url string) (*Store, error) {
	return DialConn(ctx, Conn{URL: url})
}

// Client returns the underlying client.
func (s *Store) Client() redis.UniversalClient { return s.c }

// Close closes the client.
func (s *Store) Close() error { return s.c.Close() }

// Ping reports whether Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redisstore: ping: %w", err)
	}
	return nil
}

// EventStatus returns id's configuration and live sizes. Holders whose hold
// expired before nowMs are not counted. A chain draw freezes, or is made
// without its value, at the first read past its time (FreezeDraw).
func (s *Store) EventStatus(ctx context.Context, id string, nowMs int64) (queue.EventStatus, error) {
	return s.eventStatus(ctx, id, nowMs, s.FreezeDraw)
}

// EventStatusStep implements queue.StepStore: EventStatus without a chain
// draw's steps, which its caller makes and records (FreezeDrawStep).
func (s *Store) EventStatusStep(ctx context.Context, id string, nowMs int64) (queue.EventStatus, error) {
	return s.eventStatus(ctx, id, nowMs, nil)
}

// drawStep is a chain draw's steps as a read makes them (FreezeDraw), or
// nil.
type drawStep func(ctx context.Context, e queue.Event, nowMs int64) (queue.DrawChainState, error)

func (s *Store) eventStatus(ctx context.Context, id string, nowMs int64, step drawStep) (queue.EventStatus, error) {
	var (
		conf     *redis.MapStringStringCmd
		waiting  *redis.IntCmd
		holders  *redis.IntCmd
		stats    *redis.MapStringStringCmd
		prequeue *redis.IntCmd
		door     *redis.SliceCmd
		called   *redis.IntCmd
		health   eventHealth
	)
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		health = readHealth(ctx, p, keysOf(id))
		conf = p.HGetAll(ctx, ConfigKey(id))
		waiting = p.ZCard(ctx, WaitingKey(id))
		holders = p.ZCount(ctx, HoldersKey(id), "("+strconv.FormatInt(nowMs, 10), "+inf")
		stats = p.HGetAll(ctx, StatsKey(id))
		prequeue = p.ZCard(ctx, PrequeueKey(id))
		door = p.HMGet(ctx, DoorKey(id), doorFields...)
		called = p.ZCard(ctx, CalledKey(id))
		return nil
	})
	if err != nil {
		return queue.EventStatus{}, fmt.Errorf("redisstore: event status %s: %w", id, err)
	}
	e, err := parseEvent(id, conf.Val())
	if err != nil {
		return queue.EventStatus{}, err
	}
	if step != nil {
		if e.Chain, err = step(ctx, e, nowMs); err != nil {
			return queue.EventStatus{}, err
		}
	}
	st := statsReader(stats.Val())
	num := st.num
	reports, control, err := health.parse(e.Adaptive != nil)
	if err != nil {
		return queue.EventStatus{}, fmt.Errorf("redisstore: event status %s: %w", id, err)
	}
	doorStats := doorStats(door.Val(), time.UnixMilli(nowMs))
	if e.Challenge.Enabled() {
		doorStats.Difficulty = e.Challenge.DifficultyAt(doorStats.JoinsPerSecond)
	}
	var turns *queue.Turns
	if e.Away.On() {
		turns = &queue.Turns{Called: called.Val(), CalledTotal: num("calledTotal"), ClaimedTotal: num("claimedTotal"), LapsedTotal: num("lapsedTotal")}
		if turns.Away, err = s.away(ctx, id, nowMs, num("awayAfterMs")); err != nil {
			return queue.EventStatus{}, fmt.Errorf("redisstore: event status %s: %w", id, err)
		}
	}
	var arrivals *queue.Arrivals
	if e.ArrivalSeconds > 0 {
		arrivals = &queue.Arrivals{ArrivedTotal: num("arrivedTotal"), NoShowTotal: num("noShowTotal")}
	}
	return queue.EventStatus{
		Turns: turns, Arrivals: arrivals,
		Door:  doorStats,
		Event: e, Phase: e.Phase(nowMs), Waiting: waiting.Val(), Holders: holders.Val(), AdmittedTotal: num("admittedTotal"),
		Draw:     e.DrawStatus(nowMs, prequeue.Val()),
		Fairness: st.fairness(),
		Control:  control, Health: reports,
	}, nil
}

// away counts eventID's waiting people away at nowMs: their presence a
// time older than the disconnect grace (awayAfterMs; 0: 30 s) ago.
func (s *Store) away(ctx context.Context, id string, nowMs, awayAfterMs int64) (int64, error) {
	if awayAfterMs <= 0 {
		awayAfterMs = 30_000
	}
	return s.c.ZCount(ctx, SeenKey(id), "-inf", "("+strconv.FormatInt(nowMs-awayAfterMs, 10)).Result()
}

// DrawOrder returns eventID's pre-queue in drawn order, as the line holds
// it: the users of the prequeue ZSET by score, equal scores by id.
func (s *Store) DrawOrder(ctx context.Context, eventID string) ([]string, error) {
	users, err := s.c.ZRange(ctx, PrequeueKey(eventID), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: draw order %s: %w", eventID, err)
	}
	return users, nil
}

// EventIDs lists the registered events, sorted.
func (s *Store) EventIDs(ctx context.Context) ([]string, error) {
	ids, err := s.c.SMembers(ctx, EventsKey).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: list events: %w", err)
	}
	slices.Sort(ids)
	return ids, nil
}

// DeleteEvent removes id's keys and registration unless a slot is held,
// leaving its tombstone (TombstoneKey) in the same atomic step: its log is
// to delete, and ClearTombstone says it was. An id deleted before whose
// tombstone still stands is no error: its log is still to delete.
func (s *Store) DeleteEvent(ctx context.Context, id string, nowMs int64) error {
	k := keysOf(id)
	keys := []string{k.config, k.waiting, k.holders, k.stats, k.seen, k.served, k.prequeue, k.control, k.health, k.changes, k.unrecorded, TombstoneKey(id), k.holds, k.sold, k.items, k.offsets, k.released, SpentKey(id), DoorKey(id), k.joinKeys, k.freeing, SeriesKey(id), k.journal, k.gateways,
		k.called, k.callplaces, k.claims, k.lapsed, k.moved, k.resumes, AddressesKey(id), AddressCountKey(id), k.arrived, k.order, k.overtaken, k.admissions}
	n, err := runScript(ctx, s.c, deleteEventScript, keys, nowMs).Int64()
	if err != nil {
		return fmt.Errorf("redisstore: delete event %s: %w", id, err)
	}
	var gone error
	switch n {
	case codeSlotsInUse:
		return queue.Errorf(queue.CodeSlotsInUse, "event %s still has users holding slots", id)
	case codeNoEvent:
		gone = queue.ErrEventNotFound
	case codeOK, codeTombstoned:
	default:
		return fmt.Errorf("redisstore: delete event %s: unexpected reply %d", id, n)
	}
	// Not configured, or deleted just now or before: drop a registration
	// all the same (a dangling one, or the DELETE's own).
	if err := s.c.SRem(ctx, EventsKey, id).Err(); err != nil {
		return fmt.Errorf("redisstore: unregister event %s: %w", id, err)
	}
	return gone
}

// Tombstoned reports whether id's tombstone stands: deleted, its log still
// to delete.
func (s *Store) Tombstoned(ctx context.Context, id string) (bool, error) {
	n, err := s.c.Exists(ctx, TombstoneKey(id)).Result()
	if err != nil {
		return false, fmt.Errorf("redisstore: tombstone of %s: %w", id, err)
	}
	return n > 0, nil
}

// ClearTombstone removes id's tombstone: its log is deleted.
func (s *Store) ClearTombstone(ctx context.Context, id string) error {
	if err := s.c.Del(ctx, TombstoneKey(id)).Err(); err != nil {
		return fmt.Errorf("redisstore: clear the tombstone of %s: %w", id, err)
	}
	return nil
}

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/pkg/queue"
)

// DefaultURL is the Redis every service uses when none is configured.
const DefaultURL = "redis://127.0.0.1:6379/0"

// Store is waitq's live state in Redis.
type Store struct {
	c redis.UniversalClient
	// fastTrack is the most users a join batch or a release admits at once
	// (0: only the slot monitor admits).
	fastTrack int
}

var _ queue.EventStore = (*Store)(nil)

// New returns a Store over c. It does not contact the server.
func New(c redis.UniversalClient) *Store { return &Store{c: c} }

// Dial parses a redis:// URL, connects and returns a Store with its client.
func Dial(ctx context.Context, url string) (*Store, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redisstore: parse url: %w", err)
	}
	// A caller's deadline bounds the socket wait too. Without it a Redis
	// that hangs (paused, partitioned) holds every call for the read timeout
	// times the client's own retries, unseen by readiness.
	opt.ContextTimeoutEnabled = true
	return New(redis.NewClient(opt)), nil
}

// WithFastTrack returns a Store on the same client whose joins and releases
// admit up to batch users at once while there is room (0: only the slot
// monitor's Tick admits).
func (s *Store) WithFastTrack(batch int) *Store { return &Store{c: s.c, fastTrack: max(batch, 0)} }

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

// PutEvent creates or replaces e's configuration and registers it.
func (s *Store) PutEvent(ctx context.Context, e queue.Event) (bool, error) {
	key := ConfigKey(e.ID)
	var exists *redis.IntCmd
	_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		exists = p.Exists(ctx, key)
		p.HSet(ctx, key,
			"capacity", e.Capacity,
			"holdSeconds", e.HoldSeconds,
			"state", string(e.State),
			"partitions", e.Partitions,
			"admitPerMinute", e.AdmitPerMinute)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("redisstore: put event %s: %w", e.ID, err)
	}
	// The registry lives in another cluster slot, so it is written after the
	// configuration: whoever lists an event finds its configuration.
	if err := s.c.SAdd(ctx, EventsKey, e.ID).Err(); err != nil {
		return false, fmt.Errorf("redisstore: register event %s: %w", e.ID, err)
	}
	return exists.Val() == 0, nil
}

// Event returns id's configuration.
func (s *Store) Event(ctx context.Context, id string) (queue.Event, error) {
	h, err := s.c.HGetAll(ctx, ConfigKey(id)).Result()
	if err != nil {
		return queue.Event{}, fmt.Errorf("redisstore: event %s: %w", id, err)
	}
	return parseEvent(id, h)
}

func parseEvent(id string, h map[string]string) (queue.Event, error) {
	if len(h) == 0 {
		return queue.Event{}, queue.ErrEventNotFound
	}
	e := queue.Event{ID: id, State: queue.EventState(h["state"])}
	if _, ok := h["admitPerMinute"]; !ok {
		h["admitPerMinute"] = "0" // written before the setting existed
	}
	var errs []error
	for field, dst := range map[string]*int{"capacity": &e.Capacity, "holdSeconds": &e.HoldSeconds, "partitions": &e.Partitions, "admitPerMinute": &e.AdmitPerMinute} {
		n, err := strconv.Atoi(h[field])
		if err != nil {
			errs = append(errs, fmt.Errorf("field %s: %w", field, err))
		}
		*dst = n
	}
	if err := errors.Join(errs...); err != nil {
		return queue.Event{}, fmt.Errorf("redisstore: event %s has a corrupt configuration: %w", id, err)
	}
	return e, nil
}

// EventStatus returns id's configuration and live sizes. Holders whose hold
// expired before nowMs are not counted.
func (s *Store) EventStatus(ctx context.Context, id string, nowMs int64) (queue.EventStatus, error) {
	var (
		conf     *redis.MapStringStringCmd
		waiting  *redis.IntCmd
		active   *redis.IntCmd
		admitted *redis.StringCmd
	)
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		conf = p.HGetAll(ctx, ConfigKey(id))
		waiting = p.ZCard(ctx, WaitingKey(id))
		active = p.ZCount(ctx, ActiveKey(id), "("+strconv.FormatInt(nowMs, 10), "+inf")
		admitted = p.HGet(ctx, StatsKey(id), "admittedTotal")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return queue.EventStatus{}, fmt.Errorf("redisstore: event status %s: %w", id, err)
	}
	e, err := parseEvent(id, conf.Val())
	if err != nil {
		return queue.EventStatus{}, err
	}
	total, _ := strconv.ParseInt(admitted.Val(), 10, 64)
	return queue.EventStatus{Event: e, Waiting: waiting.Val(), Active: active.Val(), AdmittedTotal: total}, nil
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

// DeleteEvent removes id's keys and registration unless a slot is held.
func (s *Store) DeleteEvent(ctx context.Context, id string, nowMs int64) error {
	k := keysOf(id)
	n, err := runScript(ctx, s.c, deleteEventScript, []string{k.config, k.waiting, k.active, k.stats, k.seen, k.served}, nowMs).Int()
	if err != nil {
		return fmt.Errorf("redisstore: delete event %s: %w", id, err)
	}
	switch n {
	case 0:
		return queue.Errorf(queue.CodeSlotsInUse, "event %s still has users holding slots", id)
	case -1:
		// Not configured; drop a dangling registration all the same.
		if err := s.c.SRem(ctx, EventsKey, id).Err(); err != nil {
			return fmt.Errorf("redisstore: unregister event %s: %w", id, err)
		}
		return queue.ErrEventNotFound
	}
	if err := s.c.SRem(ctx, EventsKey, id).Err(); err != nil {
		return fmt.Errorf("redisstore: unregister event %s: %w", id, err)
	}
	return nil
}

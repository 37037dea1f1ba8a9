package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/draw"
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
	// recorder, when set, records every change the scripts make on their
	// own in the log (Options.Recorder); failures are reported to log.
	recorder queue.Recorder
	log      *slog.Logger
}

// Store implements the ports of package queue that need the live state.
var (
	_ queue.EventStore   = (*Store)(nil)
	_ queue.GatewayStore = (*Store)(nil)
	_ queue.IngestStore  = (*Store)(nil)
	_ queue.RebuildStore = (*Store)(nil)
)

// Options are a Store's settings besides its client. The zero Options are
// a Store that only the slot monitor's Tick admits through, recording
// nothing.
type Options struct {
	// FastTrack is the most users a join batch or a release admits at once
	// while there is room (0: only the slot monitor's Tick admits).
	FastTrack int
	// Recorder, when set, records every change the scripts make on their
	// own (writes it to the log): admissions, expiries, releases and
	// sweeps, and the configuration on PutEvent. An admission is told to
	// nobody (no notice, no hold in Status) before its record is
	// acknowledged; a record that could not be written is reported to
	// Logger, and an admission left unrecorded is recorded by a later
	// monitor tick (RecordGrace).
	Recorder queue.Recorder
	// Logger receives the failures to record (nil: discarded).
	Logger *slog.Logger
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Store{c: c, fastTrack: o.FastTrack, draws: newDrawCache(), recorder: o.Recorder, log: o.Logger}, nil
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

// PutEvent creates or replaces e's configuration and registers it. An
// event's draw seed is written once: a seed already stored stays (its
// commitment may have been published), whatever e.Seed says. While the
// event is being rebuilt it changes nothing and returns ErrRebuilding: the
// rebuild would write over the change. It creates no event over a
// tombstone (TombstoneKey): nothing changes and it returns
// ErrLogNotDeleted, for the new event would start on the deleted one's log.
func (s *Store) PutEvent(ctx context.Context, e queue.Event) (bool, error) {
	return s.putEvent(ctx, e, 0)
}

// putEvent is PutEvent; with logged > 0 it is a rebuild's write of the
// log's latest config record, made at logged: written while the event is
// rebuilt, stamped logged. Otherwise the configuration is stamped
// (config.configuredAt) now, or just after the stamp stored if that is
// later, and its config record carries the same stamp: the stored
// configuration is newer than every config record in the log exactly when
// its stamp is higher than theirs (a rebuild keeps it then, WriteRebuilt).
func (s *Store) putEvent(ctx context.Context, e queue.Event, logged int64) (bool, error) {
	key, tomb := ConfigKey(e.ID), TombstoneKey(e.ID)
	var (
		created bool
		stamp   int64
	)
	put := func(tx *redis.Tx) error {
		h, err := tx.HMGet(ctx, key, "rebuilding", "configuredAt").Result()
		if err != nil {
			return err
		}
		if h[0] != nil && logged == 0 {
			return queue.ErrRebuilding
		}
		n, err := tx.Exists(ctx, key).Result()
		if err != nil {
			return err
		}
		if n == 0 {
			dead, err := tx.Exists(ctx, tomb).Result()
			if err != nil {
				return err
			}
			if dead > 0 {
				return queue.ErrLogNotDeleted
			}
		}
		created, stamp = n == 0, logged
		if stamp == 0 {
			prev, _ := h[1].(string)
			last, _ := strconv.ParseInt(prev, 10, 64)
			stamp = max(time.Now().UnixMilli(), last+1)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			putConfig(ctx, p, key, e, stamp)
			return nil
		})
		return err
	}
	var err error
	for range 100 { // the key changed between the read and the write: again
		if err = s.c.Watch(ctx, put, key, tomb); !errors.Is(err, redis.TxFailedErr) {
			break
		}
	}
	if err != nil {
		return false, fmt.Errorf("redisstore: put event %s: %w", e.ID, err)
	}
	// The registry lives in another cluster slot, so it is written after the
	// configuration: whoever lists an event finds its configuration.
	if err := s.c.SAdd(ctx, EventsKey, e.ID).Err(); err != nil {
		return false, fmt.Errorf("redisstore: register event %s: %w", e.ID, err)
	}
	if err := s.recordConfig(ctx, e.ID, stamp); err != nil {
		return false, err
	}
	return created, nil
}

// putConfig queues the writes of e's configuration, stamped, on p.
func putConfig(ctx context.Context, p redis.Pipeliner, key string, e queue.Event, stamp int64) {
	p.HSet(ctx, key,
		"configuredAt", stamp,
		"capacity", e.Capacity,
		"holdSeconds", e.HoldSeconds,
		"state", string(e.State),
		"partitions", e.Partitions,
		"admitPerMinute", e.AdmitPerMinute,
		"opensAt", e.OpensAt,
		"prequeueSeconds", e.PrequeueSeconds,
		"closesAt", e.ClosesAt,
		"targetUrl", e.TargetURL)
	if a := e.Adaptive; a != nil {
		p.HSet(ctx, key,
			"adaptive.targetLatencyMs", a.TargetLatencyMs,
			"adaptive.maxErrorRate", a.MaxErrorRate,
			"adaptive.maxLoad", a.MaxLoad,
			"adaptive.minAdmitPerMinute", a.MinAdmitPerMinute,
			"adaptive.startAdmitPerMinute", a.StartAdmitPerMinute,
			"adaptive.increasePerStep", a.IncreasePerStep,
			"adaptive.decreaseFactor", a.DecreaseFactor,
			"adaptive.stepMs", a.StepMs,
			"adaptive.maxSettleSeconds", a.MaxSettleSeconds,
			"adaptive.signalTimeoutSeconds", a.SignalTimeoutSeconds,
			"adaptive.onSignalLoss", a.OnSignalLoss)
	} else {
		p.HDel(ctx, key, adaptiveFields...)
		p.HDel(ctx, ControlKey(e.ID), controllerFields...)
	}
	if e.ReportToken != "" {
		p.HSet(ctx, key, "reportToken", e.ReportToken)
	}
	if e.Seed != nil {
		p.HSetNX(ctx, key, "drawSeed", e.Seed.Hex())
		p.HSetNX(ctx, key, "drawCommit", e.Seed.Commitment())
	}
}

// recordConfig writes id's configuration as stored (with the seed that
// stayed) to the log, with a recorder, as a config record made at stamp
// (config.configuredAt): a rebuild attaches the line to it.
func (s *Store) recordConfig(ctx context.Context, id string, stamp int64) error {
	if s.recorder == nil {
		return nil
	}
	stored, err := s.Event(ctx, id)
	if err != nil {
		return err
	}
	if err := s.recorder.Record(ctx, []queue.Message{queue.NewConfigRecord(stored, stamp)}); err != nil {
		return fmt.Errorf("redisstore: record the configuration of %s: %w: %w", id, queue.ErrBrokerUnavailable, err)
	}
	return nil
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
	if _, ok := h["capacity"]; !ok && h["rebuilding"] != "" {
		// A rebuild marked an event Redis lost and has not written its
		// configuration yet: a cached configuration goes on serving joins.
		return queue.Event{}, queue.ErrRebuilding
	}
	e := queue.Event{ID: id, State: queue.EventState(h["state"]), TargetURL: h["targetUrl"], ReportToken: h["reportToken"]}
	// Settings added later are absent from configurations written before.
	for _, f := range []string{"admitPerMinute", "opensAt", "prequeueSeconds", "closesAt"} {
		if _, ok := h[f]; !ok {
			h[f] = "0"
		}
	}
	var errs []error
	for field, dst := range map[string]*int{"capacity": &e.Capacity, "holdSeconds": &e.HoldSeconds, "partitions": &e.Partitions, "admitPerMinute": &e.AdmitPerMinute, "prequeueSeconds": &e.PrequeueSeconds} {
		n, err := strconv.Atoi(h[field])
		if err != nil {
			errs = append(errs, fmt.Errorf("field %s: %w", field, err))
		}
		*dst = n
	}
	for field, dst := range map[string]*int64{"opensAt": &e.OpensAt, "closesAt": &e.ClosesAt} {
		n, err := strconv.ParseInt(h[field], 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("field %s: %w", field, err))
		}
		*dst = n
	}
	if _, ok := h["adaptive.targetLatencyMs"]; ok {
		a := &queue.Adaptive{OnSignalLoss: h["adaptive.onSignalLoss"]}
		for field, dst := range map[string]*int{"targetLatencyMs": &a.TargetLatencyMs, "minAdmitPerMinute": &a.MinAdmitPerMinute, "startAdmitPerMinute": &a.StartAdmitPerMinute, "increasePerStep": &a.IncreasePerStep, "stepMs": &a.StepMs, "maxSettleSeconds": &a.MaxSettleSeconds, "signalTimeoutSeconds": &a.SignalTimeoutSeconds} {
			n, err := strconv.Atoi(h["adaptive."+field])
			if err != nil {
				errs = append(errs, fmt.Errorf("field adaptive.%s: %w", field, err))
			}
			*dst = n
		}
		for field, dst := range map[string]*float64{"maxErrorRate": &a.MaxErrorRate, "maxLoad": &a.MaxLoad, "decreaseFactor": &a.DecreaseFactor} {
			x, err := strconv.ParseFloat(h["adaptive."+field], 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("field adaptive.%s: %w", field, err))
			}
			*dst = x
		}
		e.Adaptive = a
	}
	if hx, ok := h["drawSeed"]; ok {
		seed, err := draw.ParseSeed(hx)
		if err != nil {
			errs = append(errs, fmt.Errorf("field drawSeed: %w", err))
		}
		e.Seed = &seed
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
		stats    *redis.MapStringStringCmd
		prequeue *redis.IntCmd
		health   eventHealth
	)
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		health = readHealth(ctx, p, keysOf(id))
		conf = p.HGetAll(ctx, ConfigKey(id))
		waiting = p.ZCard(ctx, WaitingKey(id))
		active = p.ZCount(ctx, ActiveKey(id), "("+strconv.FormatInt(nowMs, 10), "+inf")
		stats = p.HGetAll(ctx, StatsKey(id))
		prequeue = p.ZCard(ctx, PrequeueKey(id))
		return nil
	})
	if err != nil {
		return queue.EventStatus{}, fmt.Errorf("redisstore: event status %s: %w", id, err)
	}
	e, err := parseEvent(id, conf.Val())
	if err != nil {
		return queue.EventStatus{}, err
	}
	st := stats.Val()
	num := func(field string) int64 {
		n, _ := strconv.ParseInt(st[field], 10, 64)
		return n
	}
	delays := make([]int64, queue.DelayBuckets)
	for i := range delays {
		delays[i] = num("delay:" + strconv.Itoa(i))
	}
	reports, control, err := health.parse(e.Adaptive != nil)
	if err != nil {
		return queue.EventStatus{}, fmt.Errorf("redisstore: event status %s: %w", id, err)
	}
	return queue.EventStatus{
		Event: e, Phase: e.Phase(nowMs), Waiting: waiting.Val(), Active: active.Val(), AdmittedTotal: num("admittedTotal"),
		Draw:     e.DrawStatus(nowMs, prequeue.Val()),
		Fairness: queue.Fairness{Inversions: num("inversions"), IngestDelayMs: queue.SummarizeDelays(delays)},
		Control:  control, Health: reports,
	}, nil
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
	keys := []string{k.config, k.waiting, k.active, k.stats, k.seen, k.served, k.prequeue, k.control, k.health, k.changes, k.unrecorded, TombstoneKey(id)}
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

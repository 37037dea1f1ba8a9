package redisstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/draw"
)

// An event's configuration: stored (and recorded to its log), read, parsed.

// PutEvent creates or replaces e's configuration and registers it. An
// event's draw seed is written once: a seed already stored stays (its
// commitment may have been published), whatever e.Seed says. While the
// event is being rebuilt it changes nothing and returns ErrRebuilding: the
// rebuild would write over the change. It creates no event over a
// tombstone (TombstoneKey): nothing changes and it returns
// ErrLogNotDeleted, for the new event would start on the deleted one's log.
func (s *Store) PutEvent(ctx context.Context, e queue.Event) (bool, error) {
	created, _, err := s.putEvent(ctx, e, 0)
	return created, err
}

// PutEventStep is PutEvent, also returning the stamp of the configuration
// stored (config.configuredAt), which its config record carries.
func (s *Store) PutEventStep(ctx context.Context, e queue.Event) (bool, int64, error) {
	return s.putEvent(ctx, e, 0)
}

// putEvent is PutEvent; with recordedAt > 0 it is a rebuild's write of the
// log's latest config record, made at recordedAt: written while the event is
// rebuilt, stamped recordedAt. Otherwise the configuration is stamped
// (config.configuredAt) now, or just after the stamp stored if that is
// later, and its config record carries the same stamp: the stored
// configuration is newer than every config record in the log exactly when
// its stamp is higher than theirs (a rebuild keeps it then, WriteRebuilt).
func (s *Store) putEvent(ctx context.Context, e queue.Event, recordedAt int64) (bool, int64, error) {
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
		if h[0] != nil && recordedAt == 0 {
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
		created, stamp = n == 0, recordedAt
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
		return false, 0, fmt.Errorf("redisstore: put event %s: %w", e.ID, err)
	}
	// The registry lives in another cluster slot, so it is written after the
	// configuration: whoever lists an event finds its configuration.
	if err := s.c.SAdd(ctx, EventsKey, e.ID).Err(); err != nil {
		return false, 0, fmt.Errorf("redisstore: register event %s: %w", e.ID, err)
	}
	return created, stamp, nil
}

// putConfig queues the writes of e's configuration, stamped, on p.
func putConfig(ctx context.Context, p redis.Pipeliner, key string, e queue.Event, stamp int64) {
	p.HSet(ctx, key,
		"configuredAt", stamp,
		"capacity", e.Capacity,
		"staySeconds", e.StaySeconds,
		// its older spelling too, for one release: a process of the older
		// code reads a configuration this one writes (a rolling upgrade)
		"holdSeconds", e.StaySeconds,
		"state", string(e.State),
		"partitions", e.Partitions,
		"admitPerMinute", e.AdmitPerMinute,
		"opensAt", e.OpensAt,
		"prequeueSeconds", e.PrequeueSeconds,
		"closesAt", e.ClosesAt,
		"targetUrl", e.TargetURL,
		"maxItemsPerUser", e.MaxItemsPerUser,
		"arrivalSeconds", e.ArrivalSeconds)
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
	if a := e.Away; a.On() {
		p.HSet(ctx, key, "away.keepSeconds", a.KeepSeconds, "away.claimSeconds", a.ClaimSeconds, "away.notifyAhead", a.NotifyAhead)
	} else {
		p.HDel(ctx, key, "away.keepSeconds", "away.claimSeconds", "away.notifyAhead")
	}
	putJSON(ctx, p, key, "challenge", e.Challenge, e.Challenge != nil)
	putJSON(ctx, p, key, "joinToken", e.JoinToken, e.JoinToken != nil)
	putJSON(ctx, p, key, "page", e.Page, e.Page != nil)
	putJSON(ctx, p, key, "drawSource", e.DrawSource, e.DrawSource != nil)
	if e.ReportToken != "" {
		p.HSet(ctx, key, "reportToken", e.ReportToken)
	}
	if e.ShopToken != "" {
		p.HSet(ctx, key, "shopToken", e.ShopToken)
	}
	if e.Seed != nil {
		p.HSetNX(ctx, key, "drawSeed", e.Seed.Hex())
		p.HSetNX(ctx, key, "drawCommit", e.Seed.Commitment())
	}
	if e.SaltKey != nil {
		p.HSetNX(ctx, key, "drawSaltKey", hex.EncodeToString(e.SaltKey[:]))
	}
}

// putJSON queues the write of v as JSON in field, or the field's removal
// when v is not present.
func putJSON(ctx context.Context, p redis.Pipeliner, key, field string, v any, present bool) {
	if !present {
		p.HDel(ctx, key, field)
		return
	}
	js, _ := json.Marshal(v) // structs of strings, ints and bools
	p.HSet(ctx, key, field, js)
}

// Event returns id's configuration.
func (s *Store) Event(ctx context.Context, id string) (queue.Event, error) {
	h, err := s.c.HGetAll(ctx, ConfigKey(id)).Result()
	if err != nil {
		return queue.Event{}, fmt.Errorf("redisstore: event %s: %w", id, err)
	}
	return parseEvent(id, h)
}

// parseAway reads the away.* fields of h, appending their faults to errs.
func parseAway(h map[string]string, errs *[]error) queue.Away {
	var a queue.Away
	for field, dst := range map[string]*int{"keepSeconds": &a.KeepSeconds, "claimSeconds": &a.ClaimSeconds, "notifyAhead": &a.NotifyAhead} {
		v, ok := h["away."+field]
		if !ok && field == "notifyAhead" {
			continue // kept before there was one: off
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("field away.%s: %w", field, err))
		}
		*dst = n
	}
	return a
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
	e := queue.Event{ID: id, State: queue.EventState(h["state"]), TargetURL: h["targetUrl"], ReportToken: h["reportToken"], ShopToken: h["shopToken"]}
	// Settings added later are absent from configurations written before.
	for _, f := range []string{"admitPerMinute", "opensAt", "prequeueSeconds", "closesAt", "maxItemsPerUser", "arrivalSeconds"} {
		if _, ok := h[f]; !ok {
			h[f] = "0"
		}
	}
	if _, ok := h["staySeconds"]; !ok {
		h["staySeconds"] = h["holdSeconds"] // its older spelling, in configurations written before
	}
	var errs []error
	for field, dst := range map[string]*int{"capacity": &e.Capacity, "staySeconds": &e.StaySeconds, "partitions": &e.Partitions, "admitPerMinute": &e.AdmitPerMinute, "prequeueSeconds": &e.PrequeueSeconds, "maxItemsPerUser": &e.MaxItemsPerUser, "arrivalSeconds": &e.ArrivalSeconds} {
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
	if _, ok := h["away.keepSeconds"]; ok {
		e.Away = parseAway(h, &errs)
	}
	for field, dst := range map[string]any{"challenge": &e.Challenge, "joinToken": &e.JoinToken, "page": &e.Page, "drawSource": &e.DrawSource} {
		if js, ok := h[field]; ok {
			if err := json.Unmarshal([]byte(js), dst); err != nil {
				errs = append(errs, fmt.Errorf("field %s: %w", field, err))
			}
		}
	}
	if hx, ok := h["drawSeed"]; ok {
		seed, err := draw.ParseSeed(hx)
		if err != nil {
			errs = append(errs, fmt.Errorf("field drawSeed: %w", err))
		}
		e.Seed = &seed
	}
	parseChain(h, &e, &errs)
	if err := errors.Join(errs...); err != nil {
		return queue.Event{}, fmt.Errorf("redisstore: event %s has a corrupt configuration: %w", id, err)
	}
	return e, nil
}

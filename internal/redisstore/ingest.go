package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/draw"
)

// Ingest applies msgs, which have no place in the log (queue.NoOffset), as
// IngestLogged does.
func (s *Store) Ingest(ctx context.Context, msgs []queue.Message, nowMs int64) (queue.IngestResult, error) {
	logged := make([]queue.Logged, len(msgs))
	for i, m := range msgs {
		logged[i] = queue.Logged{Message: m, Offset: queue.NoOffset}
	}
	return s.IngestLogged(ctx, logged, nowMs)
}

// IngestLogged applies msgs to the waiting lines, in order per event, with one
// script call per event, all in one pipelined round trip; with the fast
// track on (Options.FastTrack) each call then admits from the head of the line
// while there is room (with a recorder, those admissions are recorded
// before their users are told). A message at or below the highest offset
// applied on its partition (OffsetsKey) is skipped and counted as ignored,
// and the marks are raised in the step that applies the batch. Records
// (queue.Op.Record) are skipped and counted as ignored: Redis made those
// changes already; they only raise the marks. The messages of an event
// being rebuilt are not written: it is listed in Rebuilding. A drop's
// pre-queue joins take their drawn places (package draw), computed here
// from the event's seed. On error nothing can be assumed written; applying
// the same messages again is harmless.
func (s *Store) IngestLogged(ctx context.Context, msgs []queue.Logged, nowMs int64) (queue.IngestResult, error) {
	var (
		order []string
		byEv  = map[string][]*queue.Logged{}
		live  = map[string]bool{} // events with a join or a leave in msgs
		res   queue.IngestResult
	)
	for i := range msgs {
		m := &msgs[i]
		if m.Op.Record() {
			res.Ignored++ // a change already made: only a rebuild reads it
			if m.Offset < 0 {
				continue
			}
		} else {
			live[m.EventID] = true
		}
		if _, ok := byEv[m.EventID]; !ok {
			order = append(order, m.EventID)
		}
		byEv[m.EventID] = append(byEv[m.EventID], m)
	}
	// A call refused because the draw changed (the event was deleted and
	// made again, or scheduled since the seed was cached) is sent again
	// with the seed read afresh; twice is enough for any one change.
	var cs []changes
	for attempt := 0; len(order) > 0; attempt++ {
		if attempt == 3 {
			return res, fmt.Errorf("redisstore: ingest: the draw of %v kept changing", order)
		}
		stale, err := s.ingestEvents(ctx, order, byEv, live, nowMs, &res, &cs)
		if err != nil {
			return res, fmt.Errorf("redisstore: ingest %d messages: %w", len(msgs), err)
		}
		order = stale
	}
	s.record(ctx, nowMs, cs)
	return res, nil
}

// ingestEvents runs the ingest script once per event of order, adding what
// it did to res, and returns the events whose draw was stale (nothing of
// theirs was written). An event of order not in live sent records only: it
// is listed neither as unknown nor as being rebuilt (its records were
// never to be written).
func (s *Store) ingestEvents(ctx context.Context, order []string, byEv map[string][]*queue.Logged, live map[string]bool, nowMs int64, res *queue.IngestResult, cs *[]changes) ([]string, error) {
	draws, err := s.draws.get(ctx, s, order)
	if err != nil {
		return nil, err
	}
	calls := make([]scriptCall, len(order))
	for i, ev := range order {
		d := draws[ev]
		args := make([]any, 0, 6+7*len(byEv[ev]))
		args = append(args, nowMs, s.fastTrack, ev, AdmissionsChannel, d.commitment, s.recordArg())
		var drawer *draw.Drawer
		if d.seed != nil {
			drawer = draw.NewDrawer(*d.seed)
		}
		for _, m := range byEv[ev] {
			score := ""
			if drawer != nil && m.Op == queue.OpJoin {
				score = strconv.FormatInt(drawer.Score(m.UserID), 10)
			}
			op := string(m.Op)
			if m.Op.Record() {
				op = "record"
			}
			args = append(args, op, m.UserID, m.TS, score, m.Partition, max(m.Offset, queue.NoOffset), m.Visit)
		}
		k := keysOf(ev)
		calls[i] = scriptCall{ingestScript, append(k.admission(), k.prequeue, k.offsets, k.visits), args}
	}
	cmds, err := s.pipeline(ctx, calls)
	if err != nil {
		return nil, err
	}
	var stale []string
	for i, cmd := range cmds {
		switch v := cmd.Val().(type) {
		case int64:
			switch {
			case !live[order[i]] && (v == codeNoEvent || v == codeRebuilding):
				continue
			case v == codeNoEvent:
				res.UnknownEvents = append(res.UnknownEvents, order[i])
				continue
			case v == codeStaleDraw:
				s.draws.forget(order[i])
				stale = append(stale, order[i])
				continue
			case v == codeRebuilding:
				res.Rebuilding = append(res.Rebuilding, order[i])
				continue
			}
		case []any:
			if len(v) == 9 {
				res.Joined += int(v[0].(int64))
				res.Left += int(v[1].(int64))
				res.Ignored += int(v[2].(int64))
				res.Admitted += int(v[3].(int64))
				res.Inversions += int(v[4].(int64))
				res.HoldsExpired += int(v[8].(int64))
				c, err := scriptChanges(order[i], v[5], v[6], v[7])
				if err != nil {
					return nil, err
				}
				*cs = append(*cs, c)
				continue
			}
		}
		return nil, fmt.Errorf("event %s: unexpected reply %v", order[i], cmd.Val())
	}
	return stale, nil
}

// drawCache keeps each event's draw seed for Ingest, which needs it for
// every pre-queue join. An entry can go stale (an event deleted and made
// again, or scheduled after it was read): ingest.lua compares the
// commitment and refuses, and Ingest reads the seed again.
type drawCache struct {
	mu sync.Mutex
	m  map[string]eventDraw
}

// eventDraw is one event's draw: nil seed and "" commitment for none.
type eventDraw struct {
	seed       *draw.Seed
	commitment string
}

func newDrawCache() *drawCache { return &drawCache{m: map[string]eventDraw{}} }

// get returns the draws of events, reading those it does not know in one
// round trip.
func (c *drawCache) get(ctx context.Context, s *Store, events []string) (map[string]eventDraw, error) {
	out := make(map[string]eventDraw, len(events))
	var missing []string
	c.mu.Lock()
	for _, ev := range events {
		if d, ok := c.m[ev]; ok {
			out[ev] = d
		} else {
			missing = append(missing, ev)
		}
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	pipe := s.c.Pipeline()
	cmds := make([]*redis.SliceCmd, len(missing))
	for i, ev := range missing {
		cmds[i] = pipe.HMGet(ctx, ConfigKey(ev), "drawSeed")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read draws: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, ev := range missing {
		var d eventDraw
		if hx, ok := cmds[i].Val()[0].(string); ok {
			seed, err := draw.ParseSeed(hx)
			if err != nil {
				return nil, fmt.Errorf("event %s has a corrupt drawSeed: %w", ev, err)
			}
			d = eventDraw{seed: &seed, commitment: seed.Commitment()}
		}
		c.m[ev] = d
		out[ev] = d
	}
	return out, nil
}

func (c *drawCache) forget(ev string) {
	c.mu.Lock()
	delete(c.m, ev)
	c.mu.Unlock()
}

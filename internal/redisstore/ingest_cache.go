package redisstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/pkg/draw"
)

// lineLasts keeps, by event, the score of the line's last member as this
// Store's latest ingest.lua call of the event left it. It is a hint: the
// line changes meanwhile (other consumers, admissions, leaves), and
// ingest.lua reads the true last itself. A plain batch stamped after the
// hint is sent without its journal notes (ingest.lua notes the joins that
// land before the last after all, as the general step does): new joins
// arriving in order mostly go behind everyone, and the notes would cost
// Redis every join's line for nothing.
type lineLasts struct {
	mu sync.Mutex
	m  map[string]int64
}

// lineLast is one event's hint: known false for none.
type lineLast struct {
	score int64
	known bool
}

func newLineLasts() *lineLasts { return &lineLasts{m: map[string]int64{}} }

func (l *lineLasts) get(ev string) lineLast {
	l.mu.Lock()
	defer l.mu.Unlock()
	score, ok := l.m[ev]
	return lineLast{score, ok}
}

// set keeps last, ingest.lua's (unknown: the line is empty), for ev.
func (l *lineLasts) set(ev string, last lineLast) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last.known {
		l.m[ev] = last.score
	} else {
		delete(l.m, ev)
	}
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

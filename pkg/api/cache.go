package api

import (
	"context"
	"sync"
	"time"

	"github.com/waitq/waitq/pkg/queue"
)

// eventCache keeps found event configurations for a short time, so a join
// costs no Redis round trip. Misses are never cached: an event created
// through another replica is seen at once, and unknown ids cannot grow it.
type eventCache struct {
	store queue.EventStore
	ttl   time.Duration
	now   func() time.Time

	mu      sync.RWMutex
	entries map[string]cachedEvent
}

type cachedEvent struct {
	ev      queue.Event
	expires time.Time
}

// storeTimeout bounds an event lookup on the join path.
const storeTimeout = time.Second

func newEventCache(store queue.EventStore, ttl time.Duration, now func() time.Time) *eventCache {
	return &eventCache{store: store, ttl: ttl, now: now, entries: map[string]cachedEvent{}}
}

// get returns id's configuration, or ErrEventNotFound.
func (c *eventCache) get(ctx context.Context, id string) (queue.Event, error) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.entries[id]
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.ev, nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	ev, err := c.store.Event(ctx, id)
	if err != nil {
		c.forget(id)
		return queue.Event{}, err
	}
	c.mu.Lock()
	c.entries[id] = cachedEvent{ev: ev, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return ev, nil
}

func (c *eventCache) forget(id string) {
	c.mu.Lock()
	delete(c.entries, id)
	c.mu.Unlock()
}

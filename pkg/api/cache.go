package api

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/waitq/waitq/pkg/queue"
)

// eventCache keeps found event configurations for a short time, so a join
// costs no Redis round trip. Misses are never cached: an event created
// through another replica is seen at once, and unknown ids cannot grow it.
//
// While Redis does not answer, a configuration read within staleLimit goes
// on serving, asked for again only every staleRetry: joins keep flowing into
// Kafka, the durable log, through a Redis outage instead of being refused.
type eventCache struct {
	store queue.EventStore
	ttl   time.Duration
	now   func() time.Time

	mu      sync.RWMutex
	entries map[string]cachedEvent
}

type cachedEvent struct {
	ev      queue.Event
	read    time.Time // when the store last answered with ev
	expires time.Time // when to ask the store again
}

const (
	// storeTimeout bounds an event lookup on the join path.
	storeTimeout = time.Second
	// staleLimit is how long after the store last answered a configuration
	// is served while the store fails.
	staleLimit = 5 * time.Minute
	// staleRetry is how often a failing store is asked again meanwhile.
	staleRetry = time.Second
)

func newEventCache(store queue.EventStore, ttl time.Duration, now func() time.Time) *eventCache {
	return &eventCache{store: store, ttl: ttl, now: now, entries: map[string]cachedEvent{}}
}

// get returns id's configuration, or ErrEventNotFound. Of the joins that
// find an entry expired, one asks the store; the others go on with the
// entry meanwhile instead of all waiting on Redis at once.
func (c *eventCache) get(ctx context.Context, id string) (queue.Event, error) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.entries[id]
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.ev, nil
	}
	if ok {
		var ask bool
		if e, ok, ask = c.claim(id, now); !ask {
			return e.ev, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	ev, err := c.store.Event(ctx, id)
	switch {
	case err == nil:
		c.put(id, cachedEvent{ev: ev, read: now, expires: now.Add(c.ttl)})
		return ev, nil
	case ok && !errors.Is(err, queue.ErrEventNotFound) && now.Before(e.read.Add(staleLimit)):
		e.expires = c.now().Add(staleRetry) // from the failure, not the ask
		c.put(id, e)
		return e.ev, nil
	default:
		c.forget(id)
		return queue.Event{}, err
	}
}

// claim makes the caller the one to ask the store for id, unless another
// caller did already: the entry stays served until the answer is in. It
// returns the entry as it now is, whether there is one, and whether the
// caller is to ask the store.
func (c *eventCache) claim(id string, now time.Time) (e cachedEvent, ok, ask bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok = c.entries[id]
	switch {
	case !ok: // invalidated meanwhile: ask, with nothing to fall back on
		return e, false, true
	case now.Before(e.expires): // refreshed or claimed by another caller
		return e, true, false
	}
	e.expires = now.Add(storeTimeout)
	c.entries[id] = e
	return e, true, true
}

func (c *eventCache) put(id string, e cachedEvent) {
	c.mu.Lock()
	c.entries[id] = e
	c.mu.Unlock()
}

func (c *eventCache) forget(id string) {
	c.mu.Lock()
	delete(c.entries, id)
	c.mu.Unlock()
}

package queue

import (
	"context"
	"errors"
	"sync"
	"time"
)

// EventCache keeps found event configurations for a short time, so a join
// or a connect costs no store round trip. Misses are never cached: an event created
// through another replica is seen at once, and unknown ids cannot grow it.
//
// While the store does not answer, a configuration read within staleLimit goes
// on serving, asked for again only every staleRetry: joins keep flowing into
// Kafka, the durable log, and sockets keep connecting through a Redis outage
// instead of being refused.
type EventCache struct {
	store EventLookup
	ttl   time.Duration
	now   func() time.Time

	mu      sync.RWMutex
	entries map[string]cachedEvent
}

type cachedEvent struct {
	ev      Event
	read    time.Time // when the store last answered with ev
	expires time.Time // when to ask the store again
}

const (
	// storeTimeout bounds one lookup in the store.
	storeTimeout = time.Second
	// staleLimit is how long after the store last answered a configuration
	// is served while the store fails.
	staleLimit = 5 * time.Minute
	// staleRetry is how often a failing store is asked again meanwhile.
	staleRetry = time.Second
)

// NewEventCache returns a cache over store whose entries live ttl by the
// clock now. It is safe for concurrent use.
func NewEventCache(store EventLookup, ttl time.Duration, now func() time.Time) *EventCache {
	return &EventCache{store: store, ttl: ttl, now: now, entries: map[string]cachedEvent{}}
}

// Event returns id's configuration, or ErrEventNotFound. Of the callers
// that find an entry expired, one asks the store; the others go on with the
// entry meanwhile instead of all waiting on the store at once.
func (c *EventCache) Event(ctx context.Context, id string) (Event, error) {
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
	case ok && !errors.Is(err, ErrEventNotFound) && now.Before(e.read.Add(staleLimit)):
		e.expires = c.now().Add(staleRetry) // from the failure, not the ask
		c.put(id, e)
		return e.ev, nil
	default:
		c.Forget(id)
		return Event{}, err
	}
}

// claim makes the caller the one to ask the store for id, unless another
// caller did already: the entry stays served until the answer is in. It
// returns the entry as it now is, whether there is one, and whether the
// caller is to ask the store.
func (c *EventCache) claim(id string, now time.Time) (e cachedEvent, ok, ask bool) {
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

func (c *EventCache) put(id string, e cachedEvent) {
	c.mu.Lock()
	c.entries[id] = e
	c.mu.Unlock()
}

// Forget drops id's entry, so the next lookup asks the store: after the
// event changed here.
func (c *EventCache) Forget(id string) {
	c.mu.Lock()
	delete(c.entries, id)
	c.mu.Unlock()
}

package gateway

import (
	"context"
	"sync"

	"github.com/waitq/waitq/internal/queue"
)

// openings is the earliest drop opening (opensAt) the gateway knows to
// come: the slot monitor runs an extra tick then, so an opening waits for no
// monitor interval. It learns openings from the configurations it reads
// (noteOpening): every event's at the monitor's start and after each tick,
// and those of the status rounds (with greetings) and polls. Safe for
// concurrent use.
type openings struct {
	mu   sync.Mutex
	next int64 // unix ms; 0: none known
	// changed is signalled (capacity 1) when next moves earlier.
	changed chan struct{}
}

func newOpenings() *openings { return &openings{changed: make(chan struct{}, 1)} }

// note records an opening at atMs, when it is still to come at nowMs.
func (o *openings) note(atMs, nowMs int64) {
	if atMs <= nowMs {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.next != 0 && o.next <= atMs {
		return
	}
	o.next = atMs
	select {
	case o.changed <- struct{}{}:
	default:
	}
}

// take returns the earliest opening known and forgets it: the tick run
// for it learns the later ones again.
func (o *openings) take() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	at := o.next
	o.next = 0
	return at
}

// peek returns the earliest opening known (0: none).
func (o *openings) peek() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.next
}

// noteOpenings learns the openings to come of every registered event.
func (s *Server) noteOpenings(ctx context.Context) {
	ids, err := s.store.EventIDs(ctx)
	if err != nil {
		return // the next tick lists them again
	}
	s.noteOpeningsOf(ctx, ids)
}

// noteOpeningsOf learns the openings to come of events ids, through the
// event cache.
func (s *Server) noteOpeningsOf(ctx context.Context, ids []string) {
	nowMs := s.now().UnixMilli()
	for _, id := range ids {
		s.noteOpening(s.eventOf(ctx, id), nowMs)
	}
}

// noteOpening notes e's drop opening for the slot monitor when it is still
// to come at nowMs (e nil: nothing): the one way a configuration read
// teaches the monitor an opening, called where one is read for that
// (noteOpeningsOf) or for a status (pushAll, pollStatus). Reading a
// configuration (eventOf) notes nothing by itself.
func (s *Server) noteOpening(e *queue.Event, nowMs int64) {
	if e != nil {
		s.openings.note(e.OpensAt, nowMs)
	}
}

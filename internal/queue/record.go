package queue

import "context"

// Recorder writes records (admissions, releases, expiries, sweeps,
// configurations) to their events' logs and returns once the broker
// acknowledged all of them from every in-sync replica.
type Recorder interface {
	Record(ctx context.Context, msgs []Message) error
}

// ErrRebuilding answers a change asked of an event while its live state is
// rebuilt from the log: nothing changed, and the caller may try again in a
// moment.
var ErrRebuilding = &Error{Code: CodeStoreUnavailable, Message: "the event is being rebuilt from its log; try again in a moment"}

// LogStats counts what a read of an event's whole log found.
type LogStats struct {
	Partitions int
	// Messages counts the messages read; Invalid those that did not decode
	// or belong to another event (skipped, as the consumer dead-letters
	// them).
	Messages, Invalid int64
}

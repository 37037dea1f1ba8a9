// Package rebuild rebuilds an event's live state (Redis) from its Kafka log
// alone: the configuration, the waiting line with its scores, the holders
// and their expiries, the served marks, the pre-queue and admittedTotal.
// It runs while the services run: the event's admission pauses, statuses
// say rebuilding and the consumer holds the event's messages until it ends.
// Rebuild is safe to run again (the state is a function of the log); two
// rebuilds of one event at once are not.
package rebuild

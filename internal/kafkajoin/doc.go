// Package kafkajoin is the only package that speaks Kafka. It publishes joins
// and leaves, and the records of changes, to the per-event topics with
// acknowledgement from all in-sync replicas (Publisher), creates and deletes
// those topics and reads one whole for a rebuild (Admin), and runs the
// ingest side: a consumer-group member that discovers every topic with the
// join prefix, hands batches to a Sink, commits only what the Sink wrote, and
// dead-letters what can never be applied (Consumer).
//
// Publisher and Admin are safe for concurrent use; a Consumer runs in one
// goroutine (Run) and reports its state through safe accessors.
package kafkajoin

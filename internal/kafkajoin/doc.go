// Package kafkajoin is the only package that speaks Kafka. It publishes joins
// and leaves, and the records of changes, to the per-event topics with
// acknowledgement from all in-sync replicas (Publisher: queue.Publisher and
// queue.Recorder), creates and deletes those topics and reads one whole for
// a rebuild (Admin: queue.Topics and queue.LogReader), and runs the ingest
// side: a consumer-group member that discovers every topic with the join
// prefix, hands batches to the live state (a queue.IngestStore), commits
// only what it wrote, and dead-letters what can never be applied
// (Consumer).
//
// Publisher and Admin are safe for concurrent use; a Consumer runs in one
// goroutine (Run) and reports its state through safe accessors.
package kafkajoin

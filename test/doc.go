// Package test holds end-to-end suites that run waitq's real binaries as
// processes against a real Kafka-protocol broker (kfake) and redis-server,
// and inject faults by signalling those processes.
package test

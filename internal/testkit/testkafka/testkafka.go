// Package testkafka runs franz-go's kfake, a Kafka wire-protocol broker, in
// the test process (stack.StartKafka), configured for fast group
// rebalances.
package testkafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/waitq/waitq/internal/stack"
)

// Start returns a running single-broker cluster, closed at cleanup. Its
// minimum group session timeout is lowered so that a killed consumer's
// partitions move within a couple of seconds.
func Start(tb testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	tb.Helper()
	return StartBrokers(tb, 1, opts...)
}

// StartBrokers is Start with n brokers: an event's partitions are led by
// different brokers, so a client must find each partition's leader, as
// against a real cluster.
func StartBrokers(tb testing.TB, n int, opts ...kfake.Opt) *kfake.Cluster {
	tb.Helper()
	c, err := stack.StartKafka(stack.KafkaOptions{Brokers: n, MinSessionTimeout: 500 * time.Millisecond, Opts: opts})
	if err != nil {
		tb.Fatalf("testkafka: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

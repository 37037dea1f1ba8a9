// Package testkafka runs franz-go's kfake, a Kafka wire-protocol broker, in
// the test process, configured for fast group rebalances.
package testkafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
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
	base := []kfake.Opt{
		kfake.NumBrokers(n),
		kfake.GroupMinSessionTimeout(500 * time.Millisecond),
	}
	c, err := kfake.NewCluster(append(base, opts...)...)
	if err != nil {
		tb.Fatalf("testkafka: start kfake: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

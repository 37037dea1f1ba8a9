package kafkajoin_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// sleepingStore takes a batch in a set time a message, as Redis would,
// without the CPU: what is left is the consumer's own pace.
type sleepingStore struct {
	perMessage time.Duration
	written    atomic.Int64
}

func (s *sleepingStore) IngestLog(_ context.Context, msgs []queue.LogMessage, _ int64) (queue.IngestResult, error) {
	time.Sleep(time.Duration(len(msgs)) * s.perMessage)
	s.written.Add(int64(len(msgs)))
	return queue.IngestResult{Joined: len(msgs)}, nil
}

// BenchmarkConsumerPace reads 200,000 joins from six partitions of a kfake
// broker into a store that only sleeps, with each run's consumer in a group
// of its own, and reports msg/s: how fast the fetch, the lanes and the
// commits go when the store is not the limit ("none"), and when each
// message takes the store 2 µs, about what a plain join costs Redis
// (docs/performance.md, "The ingest step's Redis CPU").
func BenchmarkConsumerPace(b *testing.B) {
	const n = 200_000
	sys := testsys.Start(b, testsys.Options{})
	ev := "bench"
	sys.CreateEvent(ev, 10, 6)
	w := &kafka.Writer{Addr: kafka.TCP(sys.BrokerConfig.Brokers...), Topic: sys.BrokerConfig.Topic(ev), Balancer: kafka.Murmur2Balancer{},
		BatchSize: 5000, BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	msgs := make([]kafka.Message, 0, n)
	for i := range n {
		m := queue.Message{V: queue.MessageVersion, Op: queue.OpJoin, EventID: ev, UserID: "u" + strconv.Itoa(i), TS: int64(i + 1), ID: "j" + strconv.Itoa(i)}
		v, err := m.Encode()
		if err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, kafka.Message{Key: []byte(m.UserID), Value: v})
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		b.Fatal(err)
	}
	group := 0
	for _, per := range []time.Duration{0, 2 * time.Microsecond} {
		name := "none"
		if per > 0 {
			name = per.String() + "-a-message"
		}
		b.Run(name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				group++
				cfg := sys.ConsumerConfig()
				cfg.GroupID, cfg.MaxBatch = "bench-"+strconv.Itoa(group), 500
				store := &sleepingStore{perMessage: per}
				start := time.Now()
				c := sys.StartConsumerInto(cfg, store)
				for store.written.Load() < n {
					time.Sleep(time.Millisecond)
				}
				total += time.Since(start)
				c.Stop()
			}
			b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "msg/s")
		})
	}
}

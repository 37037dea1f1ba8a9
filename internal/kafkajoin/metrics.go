package kafkajoin

import "github.com/prometheus/client_golang/prometheus"

// RegisterMetrics registers the consumer's counters, lag and readiness with
// reg, read from Stats and Ready at each scrape.
func (c *Consumer) RegisterMetrics(reg prometheus.Registerer) {
	counter := func(name, help string, f func(ConsumerStats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f(c.Stats())) })
	}
	reg.MustRegister(
		counter("waitq_ingest_fetched_total", "Messages fetched from Kafka.", func(s ConsumerStats) int64 { return s.Fetched }),
		counter("waitq_ingest_written_total", "Joins and leaves that changed a waiting line.", func(s ConsumerStats) int64 { return s.Written }),
		counter("waitq_ingest_ignored_total", "Repeated joins and leaves of absent users.", func(s ConsumerStats) int64 { return s.Ignored }),
		counter("waitq_ingest_admitted_total", "Users the fast track admitted as their joins were written.", func(s ConsumerStats) int64 { return s.Admitted }),
		counter("waitq_ingest_inversions_total", "Joins written behind a user placed after them who was already admitted, that then had to wait.", func(s ConsumerStats) int64 { return s.Inversions }),
		counter("waitq_ingest_holds_expired_total", "Item holds that ended unconfirmed with the slots of holders the fast track's admission step expired (ws-gateway's waitq_holds_expired_total counts the others, by event).", func(s ConsumerStats) int64 { return s.HoldsExpired }),
		counter("waitq_ingest_dead_lettered_total", "Messages sent to the dead-letter topic.", func(s ConsumerStats) int64 { return s.DeadLettered }),
		counter("waitq_ingest_retries_total", "Failed write attempts that were retried.", func(s ConsumerStats) int64 { return s.Retries }),
		counter("waitq_ingest_commit_errors_total", "Offset commits that failed (the batch is redelivered).", func(s ConsumerStats) int64 { return s.CommitErrors }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitq_ingest_lag_messages", Help: "Messages behind the newest, over the partitions last handled."},
			func() float64 { return float64(c.Stats().Lag) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitq_ingest_ready", Help: "1 when the broker and Redis answer."}, func() float64 {
			if c.Ready() {
				return 1
			}
			return 0
		}),
	)
}

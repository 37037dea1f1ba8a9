package producer

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	joins   *prometheus.CounterVec
	publish prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		joins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitq_queue_requests_total",
			Help: "Join and leave requests accepted (acknowledged by Kafka), by operation.",
		}, []string{"op"}),
		publish: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "waitq_publish_seconds",
			Help:    "Time from publish to Kafka acknowledgement (acks=all).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
	}
	reg.MustRegister(m.joins, m.publish)
	return m
}

package producer

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/pkg/queue"
)

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

// eventCollector exports every event's line and fairness figures, read from
// the store at each scrape: they are kept in Redis by every consumer and
// gateway, so any producer-api reports the whole system's.
type eventCollector struct {
	store   queue.EventStore
	now     func() time.Time
	log     *slog.Logger
	descs   map[string]*prometheus.Desc
	timeout time.Duration
}

func newEventCollector(store queue.EventStore, now func() time.Time, log *slog.Logger) *eventCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"event"}, nil)
	}
	return &eventCollector{store: store, now: now, log: log, timeout: 2 * time.Second, descs: map[string]*prometheus.Desc{
		"waiting":    desc("waitq_event_waiting", "Users waiting in the event's line."),
		"active":     desc("waitq_event_active", "Users holding a slot."),
		"admitted":   desc("waitq_event_admitted_total", "Users ever admitted."),
		"inversions": desc("waitq_event_inversions_total", "Joins that reached the line after a user placed behind them was admitted, and had to wait (consumer lag made the line unfair)."),
		"delayP50":   desc("waitq_event_ingest_delay_p50_seconds", "Median time from a join's stamp to its write into the line (upper bound of its power-of-two bucket)."),
		"delayP99":   desc("waitq_event_ingest_delay_p99_seconds", "99th percentile of the time from a join's stamp to its write into the line (upper bound of its power-of-two bucket)."),
		"prequeue":   desc("waitq_event_prequeue_size", "Users who joined a drop's pre-queue."),
	}}
}

// Describe implements prometheus.Collector.
func (c *eventCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *eventCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	ids, err := c.store.EventIDs(ctx)
	if err != nil {
		c.log.Warn("event metrics: list events", "err", err)
		return
	}
	now := c.now().UnixMilli()
	for _, id := range ids {
		st, err := c.store.EventStatus(ctx, id, now)
		if err != nil {
			continue // deleted meanwhile, or the store failed: the next scrape tells
		}
		put := func(name string, t prometheus.ValueType, v float64) {
			ch <- prometheus.MustNewConstMetric(c.descs[name], t, v, id)
		}
		put("waiting", prometheus.GaugeValue, float64(st.Waiting))
		put("active", prometheus.GaugeValue, float64(st.Active))
		put("admitted", prometheus.CounterValue, float64(st.AdmittedTotal))
		put("inversions", prometheus.CounterValue, float64(st.Fairness.Inversions))
		put("delayP50", prometheus.GaugeValue, float64(st.Fairness.IngestDelayMs.P50)/1000)
		put("delayP99", prometheus.GaugeValue, float64(st.Fairness.IngestDelayMs.P99)/1000)
		if st.Draw != nil {
			put("prequeue", prometheus.GaugeValue, float64(st.Draw.PrequeueSize))
		}
	}
}

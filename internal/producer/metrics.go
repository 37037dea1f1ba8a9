package producer

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/internal/queue"
)

type metrics struct {
	joins      *prometheus.CounterVec
	publish    prometheus.Histogram
	visitors   prometheus.Counter
	challenges *prometheus.CounterVec
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
		visitors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "waitq_visitors_issued_total",
			Help: "Visitor identities issued (POST /v1/visitor without a valid cookie).",
		}),
		challenges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitq_challenges_total",
			Help: "Proof-of-work challenges by outcome on this replica: issued, refused (a wrong, forged or expired solution), replayed (a solution used before). Solved ones are waitq_event_challenges_solved_total.",
		}, []string{"outcome"}),
	}
	reg.MustRegister(m.joins, m.publish, m.visitors, m.challenges)
	return m
}

// eventMetricsEvery is the least time between two reads of the store for
// the event metrics: /metrics is public, and one read costs 1 + (number of
// events) round trips, so scrapes within it, however many and from however
// many clients, are answered from the last read (a Prometheus scraping
// every 15 s or more always gets a fresh one).
const eventMetricsEvery = 5 * time.Second

// eventCollector exports every event's line and fairness figures, read from
// the store at most once every eventMetricsEvery: they are kept in Redis by
// every consumer and gateway, so any producer-api reports the whole
// system's. Collect is safe concurrently; concurrent scrapes share one read.
type eventCollector struct {
	store   queue.EventStore
	now     func() time.Time
	log     *slog.Logger
	descs   map[string]*prometheus.Desc
	timeout time.Duration
	every   time.Duration
	wall    func() time.Time // the age of the last read (the real clock)

	mu     sync.Mutex
	readAt time.Time           // when the store was last read (wall)
	last   []prometheus.Metric // what it gave
}

func newEventCollector(store queue.EventStore, now func() time.Time, log *slog.Logger) *eventCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"event"}, nil)
	}
	return &eventCollector{store: store, now: now, log: log, timeout: 2 * time.Second, every: eventMetricsEvery, wall: time.Now, descs: map[string]*prometheus.Desc{
		"waiting":    desc("waitq_event_waiting", "Users waiting in the event's line."),
		"holders":    desc("waitq_event_holders", "Users holding a slot (the holders)."),
		"capacity":   desc("waitq_event_capacity", "How many users may hold a slot at once."),
		"admitted":   desc("waitq_event_admitted_total", "Users ever admitted."),
		"inversions": desc("waitq_event_inversions_total", "Joins that reached the line after a user placed behind them was admitted, and had to wait (consumer lag made the line unfair)."),
		"pairs":      desc("waitq_event_inversion_pairs_total", "Inverted pairs of admissions: people admitted before someone who joined before them (the fairness report's order.inversions)."),
		"delayP50":   desc("waitq_event_ingest_delay_p50_seconds", "Median time from a join's stamp to its write into the line (upper bound of its power-of-two bucket)."),
		"delayP99":   desc("waitq_event_ingest_delay_p99_seconds", "99th percentile of the time from a join's stamp to its write into the line (upper bound of its power-of-two bucket)."),
		"prequeue":   desc("waitq_event_prequeue_size", "Users who joined a drop's pre-queue."),
		"opensAt":    desc("waitq_event_opens_at_seconds", "A scheduled event's opening (unix seconds)."),
		"rate":       desc("waitq_event_admit_rate_per_minute", "The admission rate in force: an adaptive event's effective rate (0: stopped), else the configured admitPerMinute (0: no rate limit)."),
		"ceiling":    desc("waitq_event_admit_ceiling_per_minute", "An adaptive event's ceiling, its admitPerMinute."),
		"increases":  desc("waitq_event_rate_increases_total", "Increases of an adaptive event's rate."),
		"decreases":  desc("waitq_event_rate_decreases_total", "Decreases of an adaptive event's rate (p95, errors or load over the limit)."),
		"stops":      desc("waitq_event_rate_stops_total", "Times an adaptive event's admission stopped for want of health reports."),
		"signalLost": desc("waitq_event_health_signal_lost", "1 while an adaptive event has no recent health report."),
		"p95":        desc("waitq_event_health_p95_seconds", "The origin's p95 latency, the worst of the reports the controller last used."),
		"errors":     desc("waitq_event_health_error_ratio", "The origin's share of failed requests in the reports the controller last used."),
		"load":       desc("waitq_event_health_load", "The highest load reported in the reports the controller last used (1: the most the shop can bear)."),
		"reportAge":  desc("waitq_event_health_report_age_seconds", "Age of the event's newest health report."),
		"target":     desc("waitq_event_health_target_p95_seconds", "An adaptive event's target p95 latency of the origin (targetLatencyMs)."),
		"issued":     desc("waitq_event_challenges_issued_total", "Proof-of-work challenges issued for the event, by every producer-api."),
		"solved":     desc("waitq_event_challenges_solved_total", "Challenges whose solution a join was acknowledged with."),
		"refused":    desc("waitq_event_challenges_refused_total", "Challenge solutions refused (wrong, forged, expired, another event's or visitor's, too easy)."),
		"difficulty": desc("waitq_event_challenge_difficulty_bits", "The challenge difficulty in force (leading zero bits; adaptive: follows the join rate)."),
		"doorRate":   desc("waitq_event_door_joins_per_second", "Joins through the door a second, over about ten seconds (what the adaptive difficulty follows)."),
		"away":       desc("waitq_event_away", "Waiting users whose page has been closed for longer than the disconnect grace (their places kept: away)."),
		"called":     desc("waitq_event_called", "Turns that came while their users were away, waiting for them (the claim window)."),
		"calledAll":  desc("waitq_event_called_total", "Turns ever called while their users were away."),
		"claimed":    desc("waitq_event_claimed_total", "Called users who came back within the claim window and were admitted."),
		"lapsedAll":  desc("waitq_event_lapsed_total", "Called users not back within the claim window (no_show)."),
		"arrived":    desc("waitq_event_arrived_total", "Admissions whose arrival at the shop was reported."),
		"noShows":    desc("waitq_event_no_shows_total", "Admissions whose slot was freed: not arrived within the arrival window."),
	}}
}

// Describe implements prometheus.Collector.
func (c *eventCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the figures of the last read of
// the store, read again when it is older than c.every.
func (c *eventCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	if w := c.wall(); c.readAt.IsZero() || w.Sub(c.readAt) >= c.every || w.Before(c.readAt) {
		var ms []prometheus.Metric
		c.read(func(m prometheus.Metric) { ms = append(ms, m) })
		c.readAt, c.last = c.wall(), ms
	}
	ms := c.last
	c.mu.Unlock()
	for _, m := range ms {
		ch <- m
	}
}

// putTurns puts the figures of st's away turns and arrivals, for an event
// that keeps places while away or has an arrival window.
func putTurns(put func(name string, t prometheus.ValueType, v float64), st queue.EventStatus) {
	if t := st.Turns; t != nil {
		put("away", prometheus.GaugeValue, float64(t.Away))
		put("called", prometheus.GaugeValue, float64(t.Called))
		put("calledAll", prometheus.CounterValue, float64(t.CalledTotal))
		put("claimed", prometheus.CounterValue, float64(t.ClaimedTotal))
		put("lapsedAll", prometheus.CounterValue, float64(t.LapsedTotal))
	}
	if a := st.Arrivals; a != nil {
		put("arrived", prometheus.CounterValue, float64(a.ArrivedTotal))
		put("noShows", prometheus.CounterValue, float64(a.NoShowTotal))
	}
}

// read reads every event's figures from the store and gives each metric to
// emit.
func (c *eventCollector) read(emit func(prometheus.Metric)) {
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
			emit(prometheus.MustNewConstMetric(c.descs[name], t, v, id))
		}
		put("waiting", prometheus.GaugeValue, float64(st.Waiting))
		put("holders", prometheus.GaugeValue, float64(st.Holders))
		put("capacity", prometheus.GaugeValue, float64(st.Capacity))
		put("admitted", prometheus.CounterValue, float64(st.AdmittedTotal))
		put("inversions", prometheus.CounterValue, float64(st.Fairness.Inversions))
		put("pairs", prometheus.CounterValue, float64(st.Fairness.InversionPairs))
		put("delayP50", prometheus.GaugeValue, float64(st.Fairness.IngestDelayMs.P50)/1000)
		put("delayP99", prometheus.GaugeValue, float64(st.Fairness.IngestDelayMs.P99)/1000)
		if st.Draw != nil {
			put("prequeue", prometheus.GaugeValue, float64(st.Draw.PrequeueSize))
		}
		if st.OpensAt > 0 {
			put("opensAt", prometheus.GaugeValue, float64(st.OpensAt)/1000)
		}
		if st.Challenge.Enabled() {
			put("issued", prometheus.CounterValue, float64(st.Door.ChallengesIssued))
			put("solved", prometheus.CounterValue, float64(st.Door.ChallengesSolved))
			put("refused", prometheus.CounterValue, float64(st.Door.ChallengesRefused))
			put("difficulty", prometheus.GaugeValue, float64(st.Door.Difficulty))
			put("doorRate", prometheus.GaugeValue, st.Door.JoinsPerSecond)
		}
		if len(st.Health) > 0 {
			put("reportAge", prometheus.GaugeValue, float64(now-st.Health[0].At)/1000)
		}
		putTurns(put, st)
		cs := st.Control
		if cs == nil {
			put("rate", prometheus.GaugeValue, float64(st.AdmitPerMinute))
			continue
		}
		put("rate", prometheus.GaugeValue, float64(cs.AdmitPerMinute))
		put("ceiling", prometheus.GaugeValue, float64(st.AdmitPerMinute))
		if st.Adaptive != nil {
			put("target", prometheus.GaugeValue, float64(st.Adaptive.TargetLatencyMs)/1000)
		}
		put("increases", prometheus.CounterValue, float64(cs.Increases))
		put("decreases", prometheus.CounterValue, float64(cs.Decreases))
		put("stops", prometheus.CounterValue, float64(cs.Stops))
		lost := 0.0
		if cs.SignalLost {
			lost = 1
		}
		put("signalLost", prometheus.GaugeValue, lost)
		if sig := cs.Signal; sig != nil {
			for name, v := range map[string]*float64{"p95": sig.P95Ms, "errors": sig.ErrorRate, "load": sig.Load} {
				if v == nil {
					continue
				}
				x := *v
				if name == "p95" {
					x /= 1000
				}
				put(name, prometheus.GaugeValue, x)
			}
		}
	}
}

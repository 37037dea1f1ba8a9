package guard

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitq/waitq/pkg/entry"
)

// metrics are the guard's Prometheus metrics, each labelled with the event;
// the series of the hot path are resolved once.
type metrics struct {
	event    string
	outcomes map[entry.Outcome]prometheus.Counter
	bypassed prometheus.Counter
	refused  *prometheus.CounterVec // event, reason
	latency  prometheus.Observer
	classes  [6]prometheus.Counter  // by status / 100; [0]: no answer
	timeouts prometheus.Counter     // no answer within the origin timeout
	releases *prometheus.CounterVec // event, result
	legacy   prometheus.Counter     // e2 tokens that passed
	// releasedErrors counts failed polls of the released admissions.
	releasedErrors prometheus.Counter

	reports   [3]prometheus.Counter // by reportResult
	healthP95 prometheus.Gauge
	healthErr prometheus.Gauge
}

// reportResult is what became of a health report.
type reportResult int

const (
	reportOK       reportResult = iota // producer-api took it
	reportRejected                     // producer-api refused it (4xx)
	reportFailed                       // it did not reach producer-api, or producer-api failed (5xx)
)

func (r reportResult) String() string {
	return [...]string{"ok", "rejected", "failed"}[r]
}

func newMetrics(reg *prometheus.Registry, event string) *metrics {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitq_guard_requests_total",
		Help: "Requests by what the guard did: passed (valid cookie), entered (valid waitq_token moved into the cookie), to_line (sent to the waiting room), unavailable (keys unknown, 503), bypassed (no token needed).",
	}, []string{"event", "outcome"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "waitq_guard_origin_seconds",
		Help:    "Time from forwarding a request to the end of the origin's answer.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"event"})
	answers := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitq_guard_origin_responses_total",
		Help: "The origin's answers by status class (1xx … 5xx), error when it did not answer (the guard sent 502), timeout when it did not answer within the origin timeout (the guard sent 504).",
	}, []string{"event", "code"})
	m := &metrics{
		event:    event,
		outcomes: map[entry.Outcome]prometheus.Counter{},
		bypassed: requests.WithLabelValues(event, "bypassed"),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitq_guard_refused_tokens_total",
			Help: "Entry tokens refused, by reason (missing: a request sent to the line with no token at all).",
		}, []string{"event", "reason"}),
		latency: latency.WithLabelValues(event),
		legacy: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "waitq_guard_legacy_tokens_total",
			Help:        "Requests passed or entered with an entry token of the format before JWTs (e2.…), accepted during the upgrade only: 0 for the longest hold after the last gateway was upgraded means none is left.",
			ConstLabels: prometheus.Labels{"event": event},
		}),
		releasedErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "waitq_guard_released_refresh_errors_total",
			Help:        "Failed polls of the gateway's released admissions (the last list stays in use): while it grows, a released token may pass.",
			ConstLabels: prometheus.Labels{"event": event},
		}),
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitq_guard_releases_total",
			Help: "Releases after the done path: released, not_held (the slot was already gone) or failed.",
		}, []string{"event", "result"}),
	}
	for _, o := range []entry.Outcome{entry.Passed, entry.Entered, entry.SentToLine, entry.Unavailable} {
		m.outcomes[o] = requests.WithLabelValues(event, o.String())
	}
	for i, code := range []string{"error", "1xx", "2xx", "3xx", "4xx", "5xx"} {
		m.classes[i] = answers.WithLabelValues(event, code)
	}
	reports := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitq_guard_health_reports_total",
		Help: "Health reports sent to producer-api: ok, rejected (a 4xx: bad token, unknown event) or failed (not sent, or a 5xx).",
	}, []string{"event", "result"})
	for r := range m.reports {
		m.reports[r] = reports.WithLabelValues(event, reportResult(r).String())
	}
	m.timeouts = answers.WithLabelValues(event, "timeout")
	m.healthP95 = prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "waitq_guard_health_p95_seconds",
		Help:        "The p95 of the origin's response time (to its headers) on guarded paths, as last reported; 0 when the window held no request.",
		ConstLabels: prometheus.Labels{"event": event},
	})
	m.healthErr = prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "waitq_guard_health_error_ratio",
		Help:        "The share of the origin's answers on guarded paths that failed (5xx, 502, 504), as last reported; 0 when the window held no request.",
		ConstLabels: prometheus.Labels{"event": event},
	})
	reg.MustRegister(requests, m.refused, m.legacy, latency, answers, m.releases, m.releasedErrors, reports, m.healthP95, m.healthErr)
	return m
}

// decided counts a decision of the guard (entry.GuardConfig.Observe).
func (m *metrics) decided(_ *http.Request, d entry.Decision) {
	if c, ok := m.outcomes[d.Outcome]; ok {
		c.Inc()
	}
	if d.Legacy {
		m.legacy.Inc()
	}
	for _, err := range []error{d.QueryErr, d.CookieErr} {
		if err != nil {
			m.refused.WithLabelValues(m.event, entry.Reason(err)).Inc()
		}
	}
	if d.Outcome == entry.SentToLine && d.QueryErr == nil && d.CookieErr == nil {
		m.refused.WithLabelValues(m.event, "missing").Inc()
	}
}

// origin records one forwarded request.
func (m *metrics) origin(rec *statusRecorder, d time.Duration) {
	m.latency.Observe(d.Seconds())
	if rec.timedOut {
		m.timeouts.Inc()
		return
	}
	class := 0
	if !rec.failed && rec.status >= 100 && rec.status <= 599 {
		class = rec.status / 100
	}
	m.classes[class].Inc()
}

// released records one release after the done path.
func (m *metrics) released(held bool, err error) {
	result := "released"
	switch {
	case err != nil:
		result = "failed"
	case !held:
		result = "not_held"
	}
	m.releases.WithLabelValues(m.event, result).Inc()
}

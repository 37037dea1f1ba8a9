package gateway

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	frames, slow, admitted, admittedLate, swept, called, lapsed, roundTrips, statusErrors, notices, framesRefused prometheus.Counter
	refused, legacyTokens, arrivals, noShows                                                                      *prometheus.CounterVec
	holders, waiting                                                                                              *prometheus.GaugeVec
	statusRound, monitorTick                                                                                      prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, h *hub, t *tracker) *metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	hist := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)})
	}
	m := &metrics{
		frames:        counter("waitq_ws_frames_sent_total", "Frames written to sockets and SSE streams, or queued behind a write under way."),
		slow:          counter("waitq_ws_slow_closed_total", "Sockets closed with 1008, and SSE streams cut, for reading too slowly."),
		admitted:      counter("waitq_admitted_total", "Users admitted by this gateway's slot monitor."),
		admittedLate:  counter("waitq_admitted_late_total", "Admitted frames not sent because the hold had ended before the gateway could tell it (the user is told expired)."),
		swept:         counter("waitq_swept_total", "Waiting users removed after the disconnect grace, or the event's away keep time."),
		called:        counter("waitq_called_total", "Waiting users called while away when their turn came (their turn waits for the claim window)."),
		lapsed:        counter("waitq_lapsed_total", "Called users whose claim window closed before they came back."),
		roundTrips:    counter("waitq_status_round_trips_total", "Redis round trips made for status frames (one per event per slice of a status round)."),
		statusErrors:  counter("waitq_status_errors_total", "Status reads that failed."),
		notices:       counter("waitq_admission_notices_total", "Admission notices received on the admissions channel (from any service)."),
		framesRefused: counter("waitq_ws_client_frames_refused_total", "Client frames refused for the per-socket frame limit (answered with a rate_limited error frame, not acted on)."),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitq_ws_refused_total", Help: "WebSocket connections refused, by reason.",
		}, []string{"reason"}),
		legacyTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitq_gateway_legacy_entry_tokens_total", Help: "Entry tokens of the format before JWTs (e2.…) verified by the release and verify routes, accepted during the upgrade only.",
		}, []string{"route"}),
		arrivals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitq_arrivals_total", Help: "Admissions whose first arrival at the shop this gateway marked (POST …/arrivals), by event.",
		}, []string{"event"}),
		noShows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitq_no_shows_total", Help: "Admissions whose slot this gateway's slot monitor freed, not arrived within the event's arrivalSeconds, by event.",
		}, []string{"event"}),
		holders: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "waitq_event_holders", Help: "Users holding a slot, by event, at the last monitor tick.",
		}, []string{"event"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "waitq_event_waiting", Help: "Users waiting, by event, at the last monitor tick.",
		}, []string{"event"}),
		statusRound: hist("waitq_status_tick_seconds", "Duration of one slice of a status round: its Redis reads and handing its frames to the write workers."),
		monitorTick: hist("waitq_admit_tick_seconds", "Duration of a slot-monitor tick over every event."),
	}
	sockets := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitq_ws_sockets", Help: "Open WebSocket connections and SSE streams."},
		func() float64 { return float64(h.count()) })
	placesRead := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitq_status_places_read_total",
		Help: "Users whose place was read from Redis: at connect, when the line's journal moved their own place, after a new journal, at the periodic re-read (the others are kept from the journal)."},
		func() float64 { return float64(t.PlacesRead()) })
	resets := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitq_status_journal_resets_total",
		Help: "Times an event's line journal started again for this gateway (a rebuild's end, a point no longer kept): its users are read again, 20,000 a read at most."},
		func() float64 { return float64(t.Resets()) })
	reg.MustRegister(placesRead, resets)
	reg.MustRegister(m.frames, m.framesRefused, m.slow, m.admitted, m.admittedLate, m.swept, m.called, m.lapsed, m.roundTrips, m.statusErrors, m.notices, m.refused, m.legacyTokens, m.arrivals, m.noShows, m.holders, m.waiting, m.statusRound, m.monitorTick, sockets)
	return m
}

package queue

// An event's series: what the operators' console charts over the last
// half hour. The slot monitor takes one sample of each event per period
// (one writer per period, whichever gateway comes first); the admin API
// reads them back in one command.

// Series settings.
const (
	// SeriesPeriodMs is the spacing of an event's samples: one per ten
	// seconds, at multiples of it (unix ms).
	SeriesPeriodMs = 10_000
	// SeriesSpanMs is how far back the samples go: 30 minutes, 180
	// samples at most.
	SeriesSpanMs = 30 * 60 * 1000
	// SeriesSignalTimeoutMs is how old a health report may be to count
	// in the sample of an event without adaptive admission (an adaptive
	// one uses its signalTimeoutSeconds).
	SeriesSignalTimeoutMs = DefaultSignalTimeoutSeconds * 1000
)

// SeriesSample is one sample of an event's series, taken at At.
type SeriesSample struct {
	// At is the start of the sample's period (unix ms, a multiple of
	// SeriesPeriodMs); the figures were read within it.
	At int64 `json:"at"`
	// State is the event's state then (open, paused, closed).
	State EventState `json:"state"`
	// Waiting is the length of the line.
	Waiting int64 `json:"waiting"`
	// Holders counts the slots held; Capacity is the event's capacity.
	Holders  int64 `json:"holders"`
	Capacity int64 `json:"capacity"`
	// AdmittedTotal counts the users ever admitted.
	AdmittedTotal int64 `json:"admittedTotal"`
	// AdmittedPerMinute is the admissions a minute since the sample
	// before, when that one is at most two periods older (nil otherwise):
	// derived on reading, not stored.
	AdmittedPerMinute *float64 `json:"admittedPerMinute"`
	// AdmitPerMinute is the rate in force: an adaptive event's effective
	// rate (nil before its controller started), else the configured
	// rate (nil: no rate limit).
	AdmitPerMinute *int64 `json:"admitPerMinute"`
	// P95Ms, ErrorRate and Load are the shop's health reports combined
	// as the adaptive controller combines them (the highest p95 and load,
	// the error share over all requests), from reports no older than the
	// signal timeout; nil when none reported the figure.
	P95Ms     *float64 `json:"p95Ms"`
	ErrorRate *float64 `json:"errorRate"`
	Load      *float64 `json:"load"`
	// TargetLatencyMs and MaxErrorRate are an adaptive event's limits
	// (nil: not adaptive).
	TargetLatencyMs *int64   `json:"targetLatencyMs"`
	MaxErrorRate    *float64 `json:"maxErrorRate"`
}

// Series is the body of GET /v1/admin/events/{eventId}/series: the
// event's samples of the last SeriesSpanMs, oldest first.
type Series struct {
	EventID  string         `json:"eventId"`
	PeriodMs int64          `json:"periodMs"`
	SpanMs   int64          `json:"spanMs"`
	Samples  []SeriesSample `json:"samples"`
}

// WithRates fills each sample's AdmittedPerMinute from the one before it
// (samples oldest first): the admissions between them scaled to a minute,
// never negative (a rebuild may restart the counter lower); nil for the
// first and after a gap of more than two periods.
func WithRates(samples []SeriesSample) []SeriesSample {
	for i := range samples {
		samples[i].AdmittedPerMinute = nil
		if i == 0 {
			continue
		}
		prev, cur := samples[i-1], samples[i]
		dt := cur.At - prev.At
		if dt <= 0 || dt > 2*SeriesPeriodMs {
			continue
		}
		v := float64(max(cur.AdmittedTotal-prev.AdmittedTotal, 0)) * 60_000 / float64(dt)
		samples[i].AdmittedPerMinute = &v
	}
	return samples
}

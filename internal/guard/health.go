package guard

import (
	"math/bits"
	"sync"
	"time"

	"github.com/waitq/waitq/internal/queue"
)

// DefaultHealthWindow is the span a health report covers unless configured
// otherwise.
const DefaultHealthWindow = 10 * time.Second

// The latency histogram is log-linear over whole microseconds, as HDR
// histograms are: values below latencySub have a bucket each, and every
// octave above is cut into latencySub buckets, so a bucket spans at most
// 1/latencySub (6.25 %) of its lower bound and its midpoint is within
// 1/(2·latencySub) (3.2 %) of any value in it. Values from 2^32 µs (71
// minutes) up share the last bucket.
const (
	latencySubBits = 4
	latencySub     = 1 << latencySubBits
	latencyBits    = 32
	latencyBuckets = (latencyBits - latencySubBits + 1) * latencySub
	maxMicros      = 1<<latencyBits - 1
)

// LatencyResolution is the largest error of the latencies a HealthRecorder
// reports, relative to the true value (plus one microsecond, the unit it
// counts in).
const LatencyResolution = 1.0 / (2 * latencySub)

// Slots of the sliding window: one a second, at least minSlots and at most
// maxSlots (so that a long window costs no more memory than a minute).
const (
	minSlots = 10
	maxSlots = 60
)

// HealthRecorder counts the origin's answers over a sliding window: how
// many, how many failed, and a histogram of their latencies. It holds a
// fixed number of slots (one a second for windows from 10 s to a minute)
// of fixed size, never a list of samples. It is safe for concurrent use.
type HealthRecorder struct {
	window time.Duration
	span   int64 // of a slot, ns

	mu    sync.Mutex
	slots []healthSlot
}

// healthSlot holds the answers of one span of time.
type healthSlot struct {
	idx              int64 // the slot's start / span; its counts are of that span only
	requests, errors int64
	hist             [latencyBuckets]uint32
}

// NewHealthRecorder returns a recorder over window (DefaultHealthWindow
// when not positive). A sample counts in the figures for between window
// less one slot (a second for the default window) and window after it was
// observed.
func NewHealthRecorder(window time.Duration) *HealthRecorder {
	if window <= 0 {
		window = DefaultHealthWindow
	}
	n := int((window + time.Second - 1) / time.Second)
	n = min(max(n, minSlots), maxSlots)
	span := (int64(window) + int64(n) - 1) / int64(n)
	return &HealthRecorder{window: window, span: span, slots: make([]healthSlot, n)}
}

// Window returns the span the figures cover.
func (h *HealthRecorder) Window() time.Duration { return h.window }

// Observe records one answer of the origin that ended at end and took d;
// failed tells that it was an error (a 5xx, no answer, a timeout). An answer
// older than the window is dropped.
func (h *HealthRecorder) Observe(end time.Time, d time.Duration, failed bool) {
	b := latencyBucket(d)
	idx := end.UnixNano() / h.span
	h.mu.Lock()
	s := &h.slots[uint64(idx)%uint64(len(h.slots))]
	switch {
	case idx > s.idx:
		// The slot held a span that left the window: start it afresh.
		*s = healthSlot{idx: idx}
	case idx < s.idx:
		h.mu.Unlock()
		return
	}
	s.requests++
	if failed {
		s.errors++
	}
	s.hist[b]++
	h.mu.Unlock()
}

// Snapshot returns the figures of the window ending at now: WindowMs, the
// Requests counted, and, when there were any, the p95 latency and the
// share of errors. Reporter is left to the caller.
func (h *HealthRecorder) Snapshot(now time.Time) queue.HealthReport {
	var (
		hist             [latencyBuckets]uint64
		requests, failed int64
	)
	cur := now.UnixNano() / h.span
	oldest := cur - int64(len(h.slots)) + 1
	h.mu.Lock()
	for i := range h.slots {
		s := &h.slots[i]
		if s.requests == 0 || s.idx < oldest || s.idx > cur {
			continue
		}
		requests += s.requests
		failed += s.errors
		for b, c := range s.hist {
			hist[b] += uint64(c)
		}
	}
	h.mu.Unlock()
	r := queue.HealthReport{WindowMs: h.window.Milliseconds(), Requests: &requests}
	if requests > 0 {
		p95 := min(percentile(&hist, uint64(requests), 95)/1000, queue.MaxHealthLatency)
		rate := float64(failed) / float64(requests)
		r.P95Ms, r.ErrorRate = &p95, &rate
	}
	return r
}

// latencyBucket returns the histogram bucket of d.
func latencyBucket(d time.Duration) int {
	v := uint64(max(d.Microseconds(), 0))
	if v > maxMicros {
		v = maxMicros
	}
	if v < latencySub {
		return int(v)
	}
	e := bits.Len64(v) - latencySubBits - 1 // v>>e is in [latencySub, 2·latencySub)
	return (e+1)*latencySub + int(v>>e) - latencySub
}

// bucketMid returns the middle of bucket b, in microseconds.
func bucketMid(b int) float64 {
	if b < latencySub {
		return float64(b)
	}
	e := b/latencySub - 1
	lo := uint64(b%latencySub+latencySub) << e
	width := uint64(1) << e
	return float64(lo) + float64(width-1)/2
}

// percentile returns the pct-th percentile (nearest rank) of the total
// samples in hist, in microseconds.
func percentile(hist *[latencyBuckets]uint64, total uint64, pct uint64) float64 {
	rank := max((pct*total+99)/100, 1)
	var seen uint64
	for b, c := range hist {
		if seen += c; seen >= rank {
			return bucketMid(b)
		}
	}
	return bucketMid(latencyBuckets - 1)
}

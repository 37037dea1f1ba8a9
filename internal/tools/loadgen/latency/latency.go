// Package latency holds the two latency records of the load tool: Sorted,
// every latency of a run in order, for runs whose count is bounded, and Hist,
// a fixed-size histogram of 1 ms buckets for runs too large to keep each one.
// Both answer nearest-rank percentiles. A Hist is safe for concurrent use; a
// Sorted is a plain slice.
package latency

import (
	"math"
	"sync/atomic"
	"time"
)

// Buckets is the number of 1 ms buckets of a Hist; one more counts anything
// later.
const Buckets = 60_000

// Sorted is a run's latencies in ascending order.
type Sorted []time.Duration

// Percentile returns the nearest-rank p-th percentile (0 < p <= 1); p = 0
// gives the smallest, an empty record 0.
func (s Sorted) Percentile(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := int(math.Ceil(float64(len(s))*p)) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Hist counts latencies in 1 ms buckets; safe for concurrent use, fixed size
// whatever the number recorded.
type Hist struct {
	buckets [Buckets + 1]atomic.Int64
	count   atomic.Int64
	maxUs   atomic.Int64
}

// Record adds one latency in microseconds; a negative one counts as 0.
func (h *Hist) Record(us int64) {
	us = max(us, 0)
	h.buckets[min(us/1000, Buckets)].Add(1)
	h.count.Add(1)
	for m := h.maxUs.Load(); us > m && !h.maxUs.CompareAndSwap(m, us); m = h.maxUs.Load() {
	}
}

// Count returns the number of latencies recorded.
func (h *Hist) Count() int64 { return h.count.Load() }

// Percentile returns the nearest-rank p-th percentile (0 < p <= 1) as the
// lower edge of its bucket; latencies at or past the last bucket count as
// its edge.
func (h *Hist) Percentile(p float64) time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(float64(n)*p)), 1)
	var seen int64
	for i := range h.buckets {
		if seen += h.buckets[i].Load(); seen >= rank {
			return time.Duration(i) * time.Millisecond
		}
	}
	return Buckets * time.Millisecond
}

// Max returns the largest latency recorded.
func (h *Hist) Max() time.Duration {
	return time.Duration(h.maxUs.Load()) * time.Microsecond
}

package queue

import "math/bits"

// The ingest delay of each join (the time from its stamp to its write into
// the line) is counted in a histogram of DelayBuckets buckets kept in the
// event's stats hash: bucket i holds delays of at most 2^i ms, the last one
// everything longer. Store.Ingest buckets the delays (DelayBucket),
// ingest.lua counts those of the joins it adds; DelaySummary reads.
const DelayBuckets = 22

// DelayBucketMs is the upper bound of bucket i in ms (the last bucket has
// none: it is reported as its lower bound).
func DelayBucketMs(i int) int64 { return int64(1) << min(i, DelayBuckets-2) }

// DelaySummary is a delay histogram's count and quantiles, each the upper
// bound of the bucket it falls in (so within a factor of 2 above the truth).
type DelaySummary struct {
	Count int64 `json:"count"`
	P50   int64 `json:"p50"`
	P99   int64 `json:"p99"`
}

// SummarizeDelays returns the summary of the histogram counts (bucket i at
// index i).
func SummarizeDelays(counts []int64) DelaySummary {
	n := histogramCount(counts)
	return DelaySummary{Count: n, P50: histogramQuantile(counts, n, 0.50), P99: histogramQuantile(counts, n, 0.99)}
}

// WaitBuckets is the number of buckets of the time-in-line histogram
// (order_lib.lua): bucket i holds admissions that waited at most 2^i ms
// from their join's stamp, the last one (over 37 hours) everything longer.
const WaitBuckets = 28

// WaitSummary is the time-in-line histogram's count and quantiles, each
// the upper bound of the bucket it falls in (DelaySummary's rule).
type WaitSummary struct {
	Count int64 `json:"count"`
	P50   int64 `json:"p50"`
	P90   int64 `json:"p90"`
}

// SummarizeWaits returns the summary of the time-in-line counts (bucket i
// at index i).
func SummarizeWaits(counts []int64) WaitSummary {
	n := histogramCount(counts)
	return WaitSummary{Count: n, P50: histogramQuantile(counts, n, 0.50), P90: histogramQuantile(counts, n, 0.90)}
}

func histogramCount(counts []int64) int64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

// histogramQuantile is the upper bound of the bucket (2^i ms; the last
// bucket its lower bound) holding the q-quantile of counts, total in all.
func histogramQuantile(counts []int64, total int64, q float64) int64 {
	if total == 0 || len(counts) < 2 {
		return 0
	}
	bound := func(i int) int64 { return int64(1) << min(i, len(counts)-2) }
	rank := max(int64(q*float64(total)+0.5), 1)
	var seen int64
	for i, n := range counts {
		seen += n
		if seen >= rank {
			return bound(i)
		}
	}
	return bound(len(counts) - 1)
}

// DelayBucket is the bucket of a delay of d ms: the least i with d <= 2^i,
// the last one for anything longer.
func DelayBucket(d int64) int {
	if d <= 1 {
		return 0
	}
	return min(bits.Len64(uint64(d-1)), DelayBuckets-1)
}

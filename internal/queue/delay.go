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
	var s DelaySummary
	for _, n := range counts {
		s.Count += n
	}
	quantile := func(q float64) int64 {
		if s.Count == 0 {
			return 0
		}
		rank := int64(q*float64(s.Count) + 0.5)
		var seen int64
		for i, n := range counts {
			seen += n
			if seen >= max(rank, 1) {
				return DelayBucketMs(i)
			}
		}
		return DelayBucketMs(len(counts) - 1)
	}
	s.P50, s.P99 = quantile(0.50), quantile(0.99)
	return s
}

// DelayBucket is the bucket of a delay of d ms: the least i with d <= 2^i,
// the last one for anything longer.
func DelayBucket(d int64) int {
	if d <= 1 {
		return 0
	}
	return min(bits.Len64(uint64(d-1)), DelayBuckets-1)
}

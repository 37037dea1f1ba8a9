package latency

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestSortedPercentile(t *testing.T) {
	ms := time.Millisecond
	s := Sorted{1 * ms, 2 * ms, 3 * ms, 4 * ms, 5 * ms, 6 * ms, 7 * ms, 8 * ms, 9 * ms, 10 * ms}
	tests := []struct {
		p    float64
		want time.Duration
	}{{0, 1 * ms}, {0.5, 5 * ms}, {0.99, 10 * ms}, {1, 10 * ms}, {0.11, 2 * ms}}
	for _, tc := range tests {
		if got := s.Percentile(tc.p); got != tc.want {
			t.Errorf("Percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := (Sorted{}).Percentile(0.5); got != 0 {
		t.Errorf("empty: %v", got)
	}
}

func TestHistMatchesSortedAtBucketEdges(t *testing.T) {
	var h Hist
	var s Sorted
	var wg sync.WaitGroup
	for i := range 1000 {
		us := int64(i*37%5000) * 1000 // whole milliseconds, so the bucket edge is exact
		s = append(s, time.Duration(us)*time.Microsecond)
		wg.Go(func() { h.Record(us) })
	}
	wg.Wait()
	slices.Sort(s)
	if h.Count() != 1000 {
		t.Fatalf("count %d", h.Count())
	}
	for _, p := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
		if got, want := h.Percentile(p), s.Percentile(p); got != want {
			t.Errorf("Percentile(%v) = %v, want %v", p, got, want)
		}
	}
	if h.Max() != s[len(s)-1] {
		t.Errorf("Max %v, want %v", h.Max(), s[len(s)-1])
	}
}

func TestHistEdges(t *testing.T) {
	var h Hist
	if h.Percentile(0.5) != 0 || h.Max() != 0 {
		t.Fatal("empty histogram is not zero")
	}
	h.Record(-5)
	h.Record(int64(2*Buckets) * 1000)
	if got := h.Percentile(0.5); got != 0 {
		t.Errorf("negative latency counts as %v, want 0", got)
	}
	if got := h.Percentile(1); got != Buckets*time.Millisecond {
		t.Errorf("late latency counts as %v, want the last edge", got)
	}
	if got := h.Max(); got != time.Duration(2*Buckets)*time.Millisecond {
		t.Errorf("Max %v", got)
	}
}

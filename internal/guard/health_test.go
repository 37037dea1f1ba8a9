package guard_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/guard"
)

// t0 is the simulated clock's start, on a second.
var t0 = time.Unix(1_800_000_000, 0)

// exactP95 returns the 95th percentile (nearest rank) of samples, in ms.
func exactP95(samples []time.Duration) float64 {
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := (95*len(s) + 99) / 100
	return float64(s[rank-1]) / float64(time.Millisecond)
}

func TestHealthP95MatchesAnExactSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	tests := []struct {
		name string
		n    int
		gen  func(i int) time.Duration
	}{
		{"one sample", 1, func(int) time.Duration { return 42 * time.Millisecond }},
		{"constant", 500, func(int) time.Duration { return 20 * time.Millisecond }},
		{"uniform to 100 ms", 10_000, func(int) time.Duration { return ms(rng.Float64() * 100) }},
		{"log-normal around 30 ms", 10_000, func(int) time.Duration { return ms(math.Exp(rng.NormFloat64() + math.Log(30))) }},
		{"bimodal, 10 % slow", 1_000, func(i int) time.Duration {
			if i%10 == 0 {
				return ms(500 + rng.Float64()*100)
			}
			return ms(5 + rng.Float64())
		}},
		{"microseconds", 1_000, func(int) time.Duration { return time.Duration(rng.IntN(40_000)) }},
		{"minutes", 100, func(int) time.Duration { return time.Duration(rng.Int64N(int64(10 * time.Minute))) }},
		{"20 samples, the nearest rank is the 19th", 20, func(i int) time.Duration { return time.Duration(i+1) * time.Millisecond }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := guard.NewHealthRecorder(10 * time.Second)
			samples := make([]time.Duration, tc.n)
			for i := range samples {
				samples[i] = tc.gen(i)
				h.Observe(t0.Add(time.Duration(i)%time.Second), samples[i], false)
			}
			r := h.Snapshot(t0.Add(time.Second))
			if err := r.Validate(); err != nil {
				t.Fatalf("invalid report %+v: %v", r, err)
			}
			if r.Requests == nil || *r.Requests != int64(tc.n) || r.P95Ms == nil || r.ErrorRate == nil || *r.ErrorRate != 0 {
				t.Fatalf("report %+v, want %d requests, a p95 and no errors", r, tc.n)
			}
			// The histogram's resolution, and the microsecond it counts in.
			want := exactP95(samples)
			if tol := want*guard.LatencyResolution + 0.001; math.Abs(*r.P95Ms-want) > tol {
				t.Errorf("p95 %.4f ms, exact %.4f ms (tolerance %.4f ms)", *r.P95Ms, want, tol)
			}
		})
	}
}

func TestHealthWindowSlides(t *testing.T) {
	h := guard.NewHealthRecorder(10 * time.Second)
	if w := h.Window(); w != 10*time.Second {
		t.Fatalf("window %v", w)
	}
	// Ten slow failures at t0, ten fast successes five seconds later.
	for range 10 {
		h.Observe(t0, time.Second, true)
		h.Observe(t0.Add(5*time.Second), time.Millisecond, false)
	}
	tests := []struct {
		name     string
		at       time.Duration
		requests int64
		errRate  float64
		p95Ms    float64 // 0: none
	}{
		{"before anything", -time.Second, 0, 0, 0},
		{"the first second", 500 * time.Millisecond, 10, 1, 1000},
		{"both halves", 9 * time.Second, 20, 0.5, 1000},
		{"the failures left", 11 * time.Second, 10, 0, 1},
		{"everything left", 16 * time.Second, 0, 0, 0},
		{"long after", time.Hour, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Snapshot(t0.Add(tc.at))
			if r.WindowMs != 10_000 || r.Requests == nil || *r.Requests != tc.requests {
				t.Fatalf("report %+v, want window 10000 ms and %d requests", r, tc.requests)
			}
			if err := r.Validate(); err != nil {
				t.Fatalf("invalid report: %v", err)
			}
			if tc.requests == 0 {
				if r.P95Ms != nil || r.ErrorRate != nil {
					t.Fatalf("figures without requests: %+v", r)
				}
				return
			}
			if *r.ErrorRate != tc.errRate || math.Abs(*r.P95Ms-tc.p95Ms) > tc.p95Ms*guard.LatencyResolution {
				t.Fatalf("error rate %v, p95 %v ms; want %v, %v ms", *r.ErrorRate, *r.P95Ms, tc.errRate, tc.p95Ms)
			}
		})
	}

	// A slot is reused once its second left the window, and an answer
	// older than the slot's second is dropped.
	h.Observe(t0.Add(20*time.Second), time.Millisecond, false)
	h.Observe(t0.Add(10*time.Second), time.Millisecond, true)
	if r := h.Snapshot(t0.Add(20 * time.Second)); *r.Requests != 1 || *r.ErrorRate != 0 {
		t.Fatalf("after reuse: %d requests, error rate %v", *r.Requests, *r.ErrorRate)
	}
}

func TestHealthErrorShare(t *testing.T) {
	tests := []struct {
		ok, failed int
		want       float64
	}{
		{10, 0, 0}, {0, 4, 1}, {3, 1, 0.25}, {999, 1, 0.001},
	}
	for _, tc := range tests {
		h := guard.NewHealthRecorder(0)
		for i := range tc.ok + tc.failed {
			h.Observe(t0, time.Millisecond, i < tc.failed)
		}
		r := h.Snapshot(t0)
		if *r.Requests != int64(tc.ok+tc.failed) || *r.ErrorRate != tc.want || r.WindowMs != guard.DefaultHealthWindow.Milliseconds() {
			t.Errorf("%d ok, %d failed: %d requests, error rate %v, window %d ms", tc.ok, tc.failed, *r.Requests, *r.ErrorRate, r.WindowMs)
		}
	}
}

func TestHealthWindowsOfEverySize(t *testing.T) {
	for _, w := range []time.Duration{time.Millisecond, 3 * time.Second, 10 * time.Second, 45 * time.Second, time.Hour} {
		h := guard.NewHealthRecorder(w)
		h.Observe(t0, time.Millisecond, false)
		in := h.Snapshot(t0.Add(w * 8 / 10)) // within the window less a slot (a tenth or less)
		out := h.Snapshot(t0.Add(w + w/10 + time.Nanosecond))
		if *in.Requests != 1 || *out.Requests != 0 || in.WindowMs != w.Milliseconds() {
			t.Errorf("window %v: %d requests inside it, %d after it, window %d ms", w, *in.Requests, *out.Requests, in.WindowMs)
		}
	}
}

func TestHealthRecorderConcurrently(t *testing.T) {
	h := guard.NewHealthRecorder(10 * time.Second)
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				h.Observe(t0.Add(time.Duration(i)*time.Millisecond), time.Duration(w+1)*time.Millisecond, w == 0)
				if i%100 == 0 {
					_ = h.Snapshot(t0.Add(time.Duration(i) * time.Millisecond))
				}
			}
		})
	}
	wg.Wait()
	r := h.Snapshot(t0.Add(2 * time.Second))
	if *r.Requests != workers*each || *r.ErrorRate != 1.0/workers {
		t.Fatalf("%d requests, error rate %v; want %d, %v", *r.Requests, *r.ErrorRate, workers*each, 1.0/workers)
	}
	if math.Abs(*r.P95Ms-8) > 8*guard.LatencyResolution {
		t.Fatalf("p95 %v ms, want 8 ms", *r.P95Ms)
	}
}

// BenchmarkHealthObserve is the cost the recorder adds to each guarded
// request, from every core at once.
func BenchmarkHealthObserve(b *testing.B) {
	h := guard.NewHealthRecorder(10 * time.Second)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := 3 * time.Millisecond
		for pb.Next() {
			h.Observe(time.Now(), d, false)
			d += time.Microsecond
		}
	})
}

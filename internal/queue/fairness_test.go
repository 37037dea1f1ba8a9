package queue_test

import (
	"testing"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/draw"
)

func TestOrderReportNormalisesThePairs(t *testing.T) {
	for _, tc := range []struct {
		n, pairs, beyond int64
		tau              float64
		exact            bool
	}{
		{0, 0, 0, 0, true},
		{1, 0, 0, 0, true},
		{4, 3, 0, 0.5, true}, // 3 of 6 pairs
		{4, 6, 1, 1, false},  // all reversed; one count short
	} {
		r := queue.NewOrderReport(tc.n, tc.pairs, tc.beyond, 7)
		if r.KendallTau != tc.tau || r.Exact != tc.exact || r.Admissions != tc.n || r.Inversions != tc.pairs || r.OvertakenJoins != 7 {
			t.Errorf("%+v: %+v", tc, r)
		}
	}
}

func TestSummarizeWaitsTakesTheBucketsUpperBounds(t *testing.T) {
	counts := make([]int64, queue.WaitBuckets)
	counts[3], counts[10], counts[queue.WaitBuckets-1] = 5, 4, 1 // ≤ 8 ms, ≤ 1024 ms, longer than 2^26 ms
	if s := queue.SummarizeWaits(counts); s != (queue.WaitSummary{Count: 10, P50: 8, P90: 1024}) {
		t.Errorf("summary %+v", s)
	}
	counts[queue.WaitBuckets-1] = 100
	if s := queue.SummarizeWaits(counts); s.P90 != 1<<(queue.WaitBuckets-2) {
		t.Errorf("the last bucket: %+v, want its lower bound", s)
	}
	if s := queue.SummarizeWaits(make([]int64, queue.WaitBuckets)); s != (queue.WaitSummary{}) {
		t.Errorf("empty: %+v", s)
	}
}

func TestDrawReportVerifiesTheSeedAgainstTheCommitment(t *testing.T) {
	seed, err := draw.NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := draw.NewSeed()
	if queue.NewDrawReport(nil) != nil {
		t.Error("a first-come line has a draw")
	}
	for _, tc := range []struct {
		name string
		d    queue.DrawStatus
		want bool
	}{
		{"sealed", queue.DrawStatus{Commitment: seed.Commitment()}, false},
		{"revealed", queue.DrawStatus{Commitment: seed.Commitment(), Seed: seed.Hex()}, true},
		{"another seed", queue.DrawStatus{Commitment: seed.Commitment(), Seed: other.Hex()}, false},
	} {
		if r := queue.NewDrawReport(&tc.d); r.Verified != tc.want || r.Commitment != tc.d.Commitment {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
}

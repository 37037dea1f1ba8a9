package gateway

import (
	"math"
	"slices"
	"testing"

	"github.com/waitq/waitq/internal/queue"
)

// renewal is a full event's admittedTotal on the turnover grid: capacity
// holders from step 0, each stay lasting stays[k] steps for the k-th of
// every len(stays) people admitted, a slot freed taken at once.
func renewal(capacity int, stays []int, steps int) []int64 {
	ends := make([]int, steps+1) // holds ending at each step
	admitted := int64(0)
	admit := func(at, n int) {
		for range n {
			if end := at + stays[admitted%int64(len(stays))]; end <= steps {
				ends[end]++
			}
			admitted++
		}
	}
	admit(0, capacity)
	totals := []int64{admitted}
	for i := 1; i <= steps; i++ {
		admit(i, ends[i])
		totals = append(totals, admitted)
	}
	return totals
}

// TestTurnoverSolvesTheStays: the share of stays ended is the first
// holders', not counting the later holders' stays that also ended (half
// the people stay 6 steps, half 18: half the stays ended from step 6, all
// from step 18, although the slots freed by step 12 are 75 % of them).
func TestTurnoverSolvesTheStays(t *testing.T) {
	tr := turnover{capacity: 100, totals: renewal(100, []int{6, 18}, 20)}
	ended := tr.stayDist()
	for _, c := range []struct{ step, want float64 }{{5, 0}, {6, 0.5}, {12, 0.5}, {17, 0.5}, {18, 1}, {20, 1}} {
		if got := ended[int(c.step)]; math.Abs(got-c.want) > 1e-9 {
			t.Errorf("ended by step %v: %v, want %v (admitted %v)", c.step, got, c.want, tr.totals[int(c.step)])
		}
	}
	if got := tr.totals[12] - tr.totals[0]; got != 75 {
		t.Errorf("slots freed by step 12: %d, want 75", got)
	}
	// Every stay seen end: the mean is the stays' (6 and 18 steps of 5 s).
	if got, want := tr.meanStay(300), 0.5*30+0.5*90; math.Abs(got-want) > 2.5+1e-9 {
		t.Errorf("mean stay %v s, want %v ± half a step", got, want)
	}
}

// TestTurnoverMeanStay: nothing is known until a stay ended; the stays
// still running are censored, ending at most at the stay's end; the mean
// never exceeds the stay.
func TestTurnoverMeanStay(t *testing.T) {
	const stay = 300
	for _, c := range []struct {
		name     string
		stays    []int
		steps    int
		min, max float64
	}{
		{"nothing ended: unknown", []int{40}, 20, 0, 0},
		{"every stay ended at 20 s", []int{4}, 10, 15, 22.5},
		// Half ended at 30 s, half still running at 60 s: more than what
		// was held so far (30 + 60 ÷ 2), less than if the rest kept the
		// whole stay (15 + 150).
		{"half still running", []int{6, 1000}, 12, 45, 165},
	} {
		tr := turnover{capacity: 100, totals: renewal(100, c.stays, c.steps)}
		if got := tr.meanStay(stay); got < c.min || got > c.max || got > stay {
			t.Errorf("%s: mean stay %v s, want %v..%v", c.name, got, c.min, c.max)
		}
	}
}

// TestTurnoverStartsAtTheFill: a turnover starts at the first read that
// finds every slot taken, with the admissions so far the first holders'
// (not after the slots turned over: this gateway came too late), and keeps
// the grid until a whole stay passed.
func TestTurnoverStartsAtTheFill(t *testing.T) {
	var tr turnover
	if tr.noteFill(false, 100, 100, 0) || tr.noteFill(true, 100, 160, 0) {
		t.Fatal("started without a fill, or with the slots turned over already")
	}
	if !tr.noteFill(true, 100, 100, 1_000) {
		t.Fatal("a fill not taken")
	}
	tr.observe(100, 6_000, 60)
	tr.observe(130, 100_000, 60)
	if want := []int64{100, 100, 130, 130, 130, 130, 130, 130, 130, 130, 130, 130, 130}; !slices.Equal(tr.totals, want) {
		t.Fatalf("grid %v, want %v (a stay's worth)", tr.totals, want)
	}
	if !tr.seenAll(60) || tr.seenAll(65) {
		t.Error("seenAll wrong at a whole stay")
	}
}

// TestEstimateFromTheStaysSeen: before the pace settles, a full event's
// estimate is position × the mean stay seen ÷ capacity, with every holder
// keeping the whole stay its high end; once a stay passed since the fill,
// the pace over a stay. Nothing seen end: the holds alone, as before.
func TestEstimateFromTheStaysSeen(t *testing.T) {
	const now = 1_000_000
	seeing := pace{perSecond: 0.5, limit: -1, stay: 300, capacity: 100, admittedTotal: 180, turnover: turnoverSeeing}
	for _, c := range []struct {
		name     string
		p        pace
		position int64
		lo, hi   int64
	}{
		{"stays seen: 150 s each", with(seeing, func(p *pace) { p.stayMean = 150 }), 400, 600, 1400},
		{"nothing seen end yet", seeing, 400, 1400, -1},
		{"the rate in force slower", with(seeing, func(p *pace) { p.stayMean, p.limit = 150, 0.4 }), 400, 1000, 1400},
		{"a stay since the fill: the pace over a stay", with(seeing, func(p *pace) { p.stayMean, p.turnover, p.perStay = 150, turnoverSeen, 0.8 }), 400, 500, 1400},
	} {
		lo, hi := estimate(c.position, c.p, now+1_400_000, now)
		if val(lo) != c.lo || val(hi) != c.hi {
			t.Errorf("%s: %d..%d, want %d..%d", c.name, val(lo), val(hi), c.lo, c.hi)
		}
	}
}

func with(p pace, f func(*pace)) pace {
	f(&p)
	return p
}

// TestPaceFollowsTheTurnover: the Teller's pace starts a turnover at the
// first read finding the slots taken, says the stays seen end, and is
// settled a stay after the fill.
func TestPaceFollowsTheTurnover(t *testing.T) {
	r := newRates()
	e := &queue.Event{ID: "e", Capacity: 100, StaySeconds: 60}
	read := func(admitted, atMs int64) pace {
		return r.pace(e, "e", queue.StatusBatch{AdmittedTotal: admitted, AdmitPerMinute: -1, SlotAt: []int64{0, atMs + 30_000}}, atMs)
	}
	if p := read(100, 0); p.turnover != turnoverSeeing || p.stayMean != 0 {
		t.Fatalf("at the fill: turnover %d, mean stay %v", p.turnover, p.stayMean)
	}
	p := read(150, 30_000) // half the stays ended by 30 s
	if p.turnover != turnoverSeeing || p.stayMean <= 0 || p.stayMean >= 60 || p.settled() {
		t.Fatalf("half ended: turnover %d, mean stay %v, settled %v", p.turnover, p.stayMean, p.settled())
	}
	if p := read(200, 60_000); p.turnover != turnoverSeen || !p.settled() || p.perStay <= 0 {
		t.Fatalf("a stay after the fill: turnover %d, settled %v, pace over a stay %v", p.turnover, p.settled(), p.perStay)
	}
}

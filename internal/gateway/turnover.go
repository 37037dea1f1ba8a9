package gateway

import "math"

// turnover is what an event's admissions since its slots were first
// filled say of how long people really keep a slot, before the measured
// pace has settled (docs/api.md, "The estimated wait"): admittedTotal on a
// grid of turnoverStep from the first read that found every slot taken
// (fill), with at most capacity + capacity ÷ 20 admitted by then, so the
// holders then were the sale's first. While people wait for a slot every
// admission after the fill is a slot freed; the first holders' stays and
// the later ones' (censored: still running) share one distribution, which
// the admissions give step by step (stayDist).
type turnover struct {
	fillMs   int64
	capacity int64
	totals   []int64 // admittedTotal at fillMs + i × turnoverStep
	mean     float64 // meanStay's answer for len(totals) (0: not yet worked out)
	meanOf   int
}

// turnoverStep is the grid of a turnover (ms), turnoverSteps its most
// steps: an hour (a longer stay's turnover is settled after an hour, its
// stays beyond it censored), which bounds stayDist's work.
const (
	turnoverStep  = 5_000
	turnoverSteps = 720
)

// gridSteps is the steps of a turnover's grid for stay (seconds).
func gridSteps(stay int64) int64 { return min(stay*1000/turnoverStep, turnoverSteps) }

// What a turnover has seen (pace.turnover): not started (no fill seen:
// this gateway came after it, or the slots were never all taken), seeing
// the first holders' stays, or seen them all (a whole stay since the fill).
const (
	turnoverNone = iota
	turnoverSeeing
	turnoverSeen
)

// seenAll reports whether the grid is whole: a whole stay (at most an
// hour) passed since the fill.
func (t *turnover) seenAll(stay int64) bool {
	return int64(len(t.totals)-1) >= gridSteps(stay)
}

// noteFill starts t at nowMs if it has not started, the event's slots are
// all taken for someone (full) and the admissions so far are the first
// holders'; it reports whether t is started.
func (t *turnover) noteFill(full bool, capacity, admittedTotal, nowMs int64) bool {
	if t.totals != nil {
		return true
	}
	if !full || capacity <= 0 || admittedTotal > capacity+capacity/20 {
		return false
	}
	t.fillMs, t.capacity, t.totals = nowMs, capacity, []int64{admittedTotal}
	return true
}

// observe records admittedTotal at nowMs on the grid, up to stay seconds
// after the fill (beyond, the first holders' stays are all known).
func (t *turnover) observe(admittedTotal, nowMs, stay int64) {
	for int64(len(t.totals)) <= min(gridSteps(stay), (nowMs-t.fillMs)/turnoverStep) {
		t.totals = append(t.totals, admittedTotal)
	}
}

// stayDist is the share of stays ended within i steps, for i up to the
// grid's end: the slots freed by step i (admissions since the fill) are
// the first holders' ended stays (capacity × ended[i]) plus those of the
// people admitted at each step j since, ended within i − j steps (a
// renewal's equation, solved forward; each share at least the one before).
func (t *turnover) stayDist() []float64 {
	a := t.totals
	ended := make([]float64, len(a))
	for i := 1; i < len(a); i++ {
		later := 0.0
		for j := 1; j < i; j++ {
			later += float64(a[j]-a[j-1]) * ended[i-j]
		}
		share := (float64(a[i]-a[0]) - later) / float64(t.capacity)
		ended[i] = math.Min(1, math.Max(ended[i-1], share))
	}
	return ended
}

// meanStay is the mean stay (seconds) the admissions since the fill say,
// at most stay: the observed part of the stays' distribution, then the
// stays still running at the grid's end (censored) ending at the rate the
// latest stays ended (tailHazard), never beyond the stay; 0 while not
// started or no stay ended (the whole stay is all that is known then).
func (t *turnover) meanStay(stay int64) float64 {
	if len(t.totals) < 2 || stay <= 0 || t.totals[len(t.totals)-1] == t.totals[0] {
		return 0
	}
	if t.meanOf != len(t.totals) {
		t.mean, t.meanOf = t.solveMean(stay), len(t.totals)
	}
	return t.mean
}

// solveMean is meanStay worked out.
func (t *turnover) solveMean(stay int64) float64 {
	ended := t.stayDist()
	held, seen := 0.0, 0.0
	for i := 1; i < len(ended) && seen < float64(stay); i++ {
		d := math.Min(turnoverStep/1000, float64(stay)-seen)
		held += d * (2 - ended[i-1] - ended[i]) / 2
		seen += d
	}
	left, rest := 1-ended[len(ended)-1], float64(stay)-seen
	if left <= 0 || rest <= 0 {
		return held
	}
	hazard := tailHazard(ended)
	return held + left*(1-math.Exp(-hazard*rest))/hazard
}

// tailHazard is the rate (a second) at which the stays still running at
// the grid's end are taken to end: the share of the stays that ended over
// the grid's last minute (its last half when shorter) ÷ the time held over
// it — stays in a shop end more often the longer they run, so the latest
// pace, not the whole grid's, says what comes next — or over the whole
// grid when none ended in its last minute. At least one stay ended.
func tailHazard(ended []float64) float64 {
	n := len(ended) - 1
	from := max(n-n/2, n-60_000/turnoverStep)
	if ended[n] == ended[from] {
		from = 0
	}
	held := 0.0
	for i := from + 1; i <= n; i++ {
		held += turnoverStep / 1000 * (2 - ended[i-1] - ended[i]) / 2
	}
	return (ended[n] - ended[from]) / held
}

package svgchart

import (
	"math"
	"strconv"
	"strings"
)

// scale maps an axis's values to px.
type scale struct {
	lo, hi   float64 // the range
	from, to float64 // its px
	log      bool
	ticks    []float64
	format   func(float64) string
}

// newScale maps a onto from..to.
func newScale(a Axis, from, to float64) scale {
	s := scale{lo: a.Min, hi: a.Max, from: from, to: to, log: a.Log}
	if a.Log {
		s.ticks = LogTicks(a.Min, a.Max)
	} else {
		s.ticks = NiceTicks(a.Min, a.Max, 5)
	}
	s.format = tickFormat(s.ticks, a.Log)
	return s
}

// px maps v to px; ok is false for a value a log scale cannot place.
func (s scale) px(v float64) (float64, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	var f float64
	if s.log {
		if v <= 0 {
			return 0, false
		}
		f = (math.Log10(v) - math.Log10(s.lo)) / (math.Log10(s.hi) - math.Log10(s.lo))
	} else {
		f = (v - s.lo) / (s.hi - s.lo)
	}
	return s.from + f*(s.to-s.from), true
}

// in reports whether v lies in the scale's range.
func (s scale) in(v float64) bool {
	const eps = 1e-9
	return v >= s.lo-eps*math.Abs(s.hi-s.lo) && v <= s.hi+eps*math.Abs(s.hi-s.lo)
}

// NiceTicks returns about n ticks covering lo..hi at a step of 1, 2 or 5
// times a power of ten: the first at or below lo, the last at or above hi.
func NiceTicks(lo, hi float64, n int) []float64 {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return []float64{0, 1}
	}
	if hi < lo {
		lo, hi = hi, lo
	}
	if hi == lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / float64(max(n, 1)))
	first, last := math.Floor(lo/step+1e-9), math.Ceil(hi/step-1e-9)
	ticks := make([]float64, 0, int(last-first)+1)
	for k := first; k <= last; k++ {
		ticks = append(ticks, roundTo(k*step, step))
	}
	return ticks
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// roundTo removes the floating-point noise of v, a multiple of step.
func roundTo(v, step float64) float64 {
	d := math.Max(0, -math.Floor(math.Log10(step))) + 1
	f := math.Pow(10, d)
	return math.Round(v*f) / f
}

// LogTicks returns the ticks of a log scale over lo..hi (both positive):
// the powers of ten, and 2 and 5 times them when the range spans at most
// two decades.
func LogTicks(lo, hi float64) []float64 {
	if lo <= 0 || hi <= lo || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
		return []float64{1, 10}
	}
	mults := []float64{1}
	if math.Log10(hi/lo) <= 2.01 {
		mults = []float64{1, 2, 5}
	}
	var ticks []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range mults {
			v := m * math.Pow(10, e)
			if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				ticks = append(ticks, v)
			}
		}
	}
	return ticks
}

// tickFormat writes ticks with the decimals their step needs; thousands
// are grouped with a thin space.
func tickFormat(ticks []float64, logScale bool) func(float64) string {
	decimals := 0
	if logScale {
		for _, t := range ticks {
			decimals = max(decimals, int(-math.Floor(math.Log10(t)+1e-9)))
		}
	} else if len(ticks) > 1 {
		decimals = max(0, int(-math.Floor(math.Log10(ticks[1]-ticks[0])+1e-9)))
	}
	return func(v float64) string {
		s := strconv.FormatFloat(v, 'f', decimals, 64)
		return group(s)
	}
}

// group puts a thin space between the thousands of a number's whole part.
func group(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	if len(whole) <= 4 {
		return sign + s
	}
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteString("\u2009")
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return sign + b.String()
}

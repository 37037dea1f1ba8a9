package svgchart

import (
	"math"
	"strconv"
	"strings"
)

// Axis is the scale of one dimension of a panel, from its first tick to
// its last.
type Axis struct {
	Label string    // names the axis and its unit
	Ticks []float64 // ascending, at least two
	Log   bool      // a base-10 scale, where values at or below 0 are gaps
}

// Decades returns the log axis from 10^from to 10^to, a tick a power of ten.
func Decades(label string, from, to int) Axis {
	a := Axis{Label: label, Log: true}
	for e := from; e <= to; e++ {
		a.Ticks = append(a.Ticks, math.Pow10(e))
	}
	return a
}

// Max returns the axis's last tick, the top of its range.
func (a Axis) Max() float64 { return a.Ticks[len(a.Ticks)-1] }

// scale maps an axis's values to px.
type scale struct {
	Axis
	lo, hi   float64 // the range, as log10 on a log scale
	from, to float64 // its px
}

// newScale maps a onto from..to.
func newScale(a Axis, from, to float64) scale {
	s := scale{Axis: a, lo: a.Ticks[0], hi: a.Max(), from: from, to: to}
	if a.Log {
		s.lo, s.hi = math.Log10(s.lo), math.Log10(s.hi)
	}
	return s
}

// px maps v to px; ok is false for a gap: NaN, or at or below 0 on a log
// scale.
func (s scale) px(v float64) (float64, bool) {
	if s.Log {
		if v <= 0 {
			return 0, false
		}
		v = math.Log10(v)
	}
	if math.IsNaN(v) {
		return 0, false
	}
	return s.from + (v-s.lo)/(s.hi-s.lo)*(s.to-s.from), true
}

// Linear returns the axis from 0 to at least top (0 counts as 1), at about
// five ticks a step of 1, 2 or 5 times a power of ten apart.
func Linear(label string, top float64) Axis {
	if top <= 0 {
		top = 1
	}
	raw := top / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * p
	for _, m := range []float64{1, 2, 5} {
		if m*p >= raw*(1-1e-9) {
			step = m * p
			break
		}
	}
	// Rounding to the step's decimals removes the floating-point noise.
	f := math.Pow(10, math.Max(0, -math.Floor(math.Log10(step)))+1)
	a := Axis{Label: label}
	for k := 0.0; k <= math.Ceil(top/step-1e-9); k++ {
		a.Ticks = append(a.Ticks, math.Round(k*step*f)/f)
	}
	return a
}

// tickFormat writes ticks with the decimals their first step needs;
// the thousands of five digits and more are grouped with a thin space.
func tickFormat(ticks []float64) func(float64) string {
	decimals := max(0, int(-math.Floor(math.Log10(ticks[1]-ticks[0])+1e-9)))
	return func(v float64) string {
		s := strconv.FormatFloat(v, 'f', decimals, 64)
		n := strings.IndexByte(s+".", '.') // the whole part's length
		if n <= 4 {
			return s
		}
		var b strings.Builder
		for i, c := range s {
			if i > 0 && i < n && (n-i)%3 == 0 {
				b.WriteString("\u2009")
			}
			b.WriteRune(c)
		}
		return b.String()
	}
}

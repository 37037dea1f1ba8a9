package svgchart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Point is one sample of a series; a NaN or infinite Y is a gap.
type Point struct{ X, Y float64 }

// Series is one line of a panel.
type Series struct {
	// Name is the line's entry in the panel's legend ("": none).
	Name string
	// Color is a CSS colour ("": black).
	Color string
	// Width is the stroke width in px (0: 1.6).
	Width float64
	// Dashed draws the line dashed, as for a target or a limit.
	Dashed bool
	// Right draws the line against the panel's right axis (Panel.Y2).
	Right  bool
	Points []Point
}

// Axis is the scale of one dimension of a panel.
type Axis struct {
	// Label names the axis and its unit.
	Label string
	// Min and Max are the range; with Max <= Min it is taken from the
	// data: from 0 (or the lowest value, when negative) up to the highest,
	// rounded out to ticks.
	Min, Max float64
	// Log makes the scale logarithmic (base 10); the range must then be
	// positive (values at or below 0 are gaps).
	Log bool
	// Format writes a tick's label (nil: the number, with the decimals
	// the ticks' step needs).
	Format func(float64) string
}

// Panel is one chart of the grid.
type Panel struct {
	Title string
	X, Y  Axis
	// Y2 is the right axis of the series with Right set (nil: none).
	Y2     *Axis
	Series []Series
}

// Chart is a titled grid of panels.
type Chart struct {
	Title string
	// Subtitles are smaller lines under the title.
	Subtitles []string
	// Width is the chart's width in px (0: 1200).
	Width int
	// PanelHeight is each panel's height in px, its title, legend and
	// axis labels included (0: 200).
	PanelHeight int
	// Columns is the number of panels a row (0: 1).
	Columns int
	// ColumnTitles head the columns (empty: none).
	ColumnTitles []string
	// Panels are laid out row by row.
	Panels []Panel
}

// Layout, in px.
const (
	outer        = 12  // around the grid
	gap          = 20  // between columns
	leftMargin   = 62  // of a plot: the Y ticks and label
	rightMargin  = 14  // of a plot without a right axis
	rightAxis    = 58  // … with one
	bottomMargin = 36  // the X ticks and label
	titleLine    = 18  // a panel's title
	legendLine   = 15  // one line of a legend
	charWidth    = 6.2 // estimated width of a character at 11 px
)

// Write writes c as a standalone SVG document to w.
func (c *Chart) Write(w io.Writer) error {
	width := c.Width
	if width <= 0 {
		width = 1200
	}
	ph := c.PanelHeight
	if ph <= 0 {
		ph = 200
	}
	cols := max(c.Columns, 1)
	rows := (len(c.Panels) + cols - 1) / cols
	head := 34 + 17*len(c.Subtitles)
	if len(c.ColumnTitles) > 0 {
		head += 24
	}
	height := head + rows*ph + outer

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	text(&b, outer, 24, 18, "start", "#111", "bold", c.Title)
	for i, s := range c.Subtitles {
		text(&b, outer, float64(42+17*i), 12, "start", "#555", "", s)
	}
	cw := (float64(width) - 2*outer - float64(cols-1)*gap) / float64(cols)
	if len(c.ColumnTitles) > 0 {
		for i, t := range c.ColumnTitles {
			if i < cols {
				text(&b, outer+float64(i)*(cw+gap), float64(head-8), 14, "start", "#111", "bold", t)
			}
		}
	}
	for i := range c.Panels {
		x := outer + float64(i%cols)*(cw+gap)
		y := float64(head + (i/cols)*ph)
		c.Panels[i].write(&b, i, x, y, cw, float64(ph))
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// scale maps an axis's values to px.
type scale struct {
	lo, hi   float64 // the range
	from, to float64 // its px
	log      bool
	ticks    []float64
	format   func(float64) string
}

// newScale fits a to the values vs and maps it onto from..to.
func newScale(a Axis, vs []float64, from, to float64) scale {
	s := scale{from: from, to: to, log: a.Log, format: a.Format}
	lo, hi := a.Min, a.Max
	if hi <= lo {
		lo, hi = dataRange(vs, a.Log)
	}
	if a.Log {
		s.lo, s.hi = lo, hi
		s.ticks = LogTicks(lo, hi)
	} else {
		s.ticks = NiceTicks(lo, hi, 5)
		if a.Max <= a.Min { // round out to the ticks
			lo, hi = s.ticks[0], s.ticks[len(s.ticks)-1]
		}
		s.lo, s.hi = lo, hi
	}
	if s.format == nil {
		s.format = tickFormat(s.ticks, a.Log)
	}
	return s
}

// dataRange is the range of an axis taken from its values.
func dataRange(vs []float64, logScale bool) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) || (logScale && v <= 0) {
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if logScale {
		if math.IsInf(lo, 1) {
			return 1, 10
		}
		lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
		if hi <= lo {
			hi = lo * 10
		}
		return lo, hi
	}
	if math.IsInf(lo, 1) {
		return 0, 1
	}
	lo = min(lo, 0)
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
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

// legendItem is a legend entry placed on its line.
type legendItem struct {
	s    *Series
	x    float64
	line int
}

// write draws panel i in the box at x, y of size w, h.
func (p *Panel) write(b *bytes.Buffer, i int, x, y, w, h float64) {
	right := float64(rightMargin)
	if p.Y2 != nil {
		right = rightAxis
	}
	left, plotW := x+leftMargin, w-leftMargin-right
	items, lines := p.legend(left, plotW)
	top := y + titleLine + float64(lines)*legendLine + 8
	bottom := y + h - bottomMargin
	text(b, left, y+13, 12, "start", "#111", "bold", p.Title)

	var xs, ys, y2s []float64
	for _, s := range p.Series {
		for _, pt := range s.Points {
			xs = append(xs, pt.X)
			if s.Right {
				y2s = append(y2s, pt.Y)
			} else {
				ys = append(ys, pt.Y)
			}
		}
	}
	sx := newScale(p.X, xs, left, left+plotW)
	sy := newScale(p.Y, ys, bottom, top)
	var sy2 scale
	if p.Y2 != nil {
		sy2 = newScale(*p.Y2, y2s, bottom, top)
	}

	// Grid, ticks and labels.
	fmt.Fprintf(b, `<g stroke="#e3e3e3" stroke-width="1">`)
	for _, t := range sy.ticks {
		if py, ok := sy.px(t); ok && sy.in(t) {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, left, py, left+plotW, py)
		}
	}
	for _, t := range sx.ticks {
		if px, ok := sx.px(t); ok && sx.in(t) {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, px, top, px, bottom)
		}
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999" stroke-width="1"/>`+"\n", left, top, plotW, bottom-top)
	for _, t := range sy.ticks {
		if py, ok := sy.px(t); ok && sy.in(t) {
			text(b, left-5, py+4, 11, "end", "#333", "", sy.format(t))
		}
	}
	for _, t := range sx.ticks {
		if px, ok := sx.px(t); ok && sx.in(t) {
			text(b, px, bottom+14, 11, "middle", "#333", "", sx.format(t))
		}
	}
	text(b, left+plotW/2, bottom+29, 11, "middle", "#333", "", p.X.Label)
	ylabel(b, x+11, (top+bottom)/2, p.Y.Label)
	if p.Y2 != nil {
		for _, t := range sy2.ticks {
			if py, ok := sy2.px(t); ok && sy2.in(t) {
				text(b, left+plotW+5, py+4, 11, "start", "#333", "", sy2.format(t))
			}
		}
		ylabel(b, x+w-6, (top+bottom)/2, p.Y2.Label)
	}

	// The lines, clipped to the plot.
	fmt.Fprintf(b, `<clipPath id="plot%d"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>`+"\n", i, left, top, plotW, bottom-top)
	fmt.Fprintf(b, `<g clip-path="url(#plot%d)" fill="none" stroke-linejoin="round" stroke-linecap="round">`+"\n", i)
	for k := range p.Series {
		s := &p.Series[k]
		ys := sy
		if s.Right && p.Y2 != nil {
			ys = sy2
		}
		d := path(s.Points, sx, ys)
		if d == "" {
			continue
		}
		fmt.Fprintf(b, `<path d="%s" %s/>`+"\n", d, stroke(s))
	}
	b.WriteString("</g>\n")

	// The legend.
	for _, it := range items {
		ly := y + titleLine + float64(it.line)*legendLine + 8
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" %s/>`, it.x, ly, it.x+18, ly, stroke(it.s))
		text(b, it.x+22, ly+4, 11, "start", "#222", "", it.s.Name)
	}
	b.WriteString("\n")
}

// legend places the named series from left over width, on as many lines
// as they need.
func (p *Panel) legend(left, width float64) ([]legendItem, int) {
	var items []legendItem
	x, line := left, 0
	for k := range p.Series {
		s := &p.Series[k]
		if s.Name == "" {
			continue
		}
		w := 22 + charWidth*float64(len([]rune(s.Name))) + 14
		if x > left && x+w > left+width {
			x, line = left, line+1
		}
		items = append(items, legendItem{s: s, x: x, line: line})
		x += w
	}
	if len(items) == 0 {
		return nil, 0
	}
	return items, line + 1
}

// path returns the SVG path of pts, a new subpath after each gap; a point
// alone between gaps is a dot.
func path(pts []Point, sx, sy scale) string {
	var b strings.Builder
	run := 0
	for _, pt := range pts {
		px, okx := sx.px(pt.X)
		py, oky := sy.px(pt.Y)
		if !okx || !oky {
			if run == 1 {
				b.WriteString("h0.01")
			}
			run = 0
			continue
		}
		if run == 0 {
			fmt.Fprintf(&b, "M%.1f %.1f", px, py)
		} else {
			fmt.Fprintf(&b, "L%.1f %.1f", px, py)
		}
		run++
	}
	if run == 1 {
		b.WriteString("h0.01")
	}
	return b.String()
}

// stroke returns the stroke attributes of s.
func stroke(s *Series) string {
	color, width := s.Color, s.Width
	if color == "" {
		color = "#000"
	}
	if width <= 0 {
		width = 1.6
	}
	a := fmt.Sprintf(`stroke="%s" stroke-width="%.1f"`, attr(color), width)
	if s.Dashed {
		a += ` stroke-dasharray="6 4"`
	}
	return a
}

// text writes one text element.
func text(b *bytes.Buffer, x, y float64, size int, anchor, color, weight, s string) {
	if s == "" {
		return
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s" fill="%s"`, x, y, size, anchor, color)
	if weight != "" {
		fmt.Fprintf(b, ` font-weight="%s"`, weight)
	}
	b.WriteString(">")
	_ = xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

// ylabel writes an axis label turned a quarter, centred on x, y.
func ylabel(b *bytes.Buffer, x, y float64, s string) {
	if s == "" {
		return
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" fill="#333" transform="rotate(-90 %.1f %.1f)">`, x, y, x, y)
	_ = xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

// attr escapes s for an attribute's value.
func attr(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
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

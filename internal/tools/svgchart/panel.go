package svgchart

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"strings"
)

// write draws panel i in the box at x, y of size w, h.
func (p *Panel) write(b *bytes.Buffer, i int, x, y, w, h float64) {
	left, plotW := x+leftMargin, w-leftMargin-rightMargin
	text(b, left, y+13, 12, "start", "#111", bold, p.Title)
	top := y + titleLine + float64(p.legend(b, left, plotW, y+titleLine+8))*legendLine + 8
	bottom := y + h - bottomMargin
	sx, sy := newScale(p.X, left, left+plotW), newScale(p.Y, bottom, top)

	// Grid lines and tick labels, under the plot's frame.
	const grid = `stroke="#e3e3e3" stroke-width="1"`
	format := tickFormat(sy.Ticks)
	for _, t := range sy.Ticks {
		py, _ := sy.px(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" %s/>`, left, py, left+plotW, py, grid)
		text(b, left-5, py+4, 11, "end", "#333", "", format(t))
	}
	format = tickFormat(sx.Ticks)
	for _, t := range sx.Ticks {
		px, _ := sx.px(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" %s/>`, px, top, px, bottom, grid)
		text(b, px, bottom+14, 11, "middle", "#333", "", format(t))
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999" stroke-width="1"/>`+"\n", left, top, plotW, bottom-top)
	text(b, left+plotW/2, bottom+29, 11, "middle", "#333", "", p.X.Label)
	ly := (top + bottom) / 2
	text(b, x+11, ly, 11, "middle", "#333", fmt.Sprintf(` transform="rotate(-90 %.1f %.1f)"`, x+11, ly), p.Y.Label)

	// The lines, clipped to the plot.
	fmt.Fprintf(b, `<clipPath id="plot%d"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>`+"\n", i, left, top, plotW, bottom-top)
	fmt.Fprintf(b, `<g clip-path="url(#plot%d)" fill="none" stroke-linejoin="round" stroke-linecap="round">`+"\n", i)
	for k := range p.Series {
		if d := path(p.Series[k].Points, sx, sy); d != "" {
			fmt.Fprintf(b, `<path d="%s" %s/>`+"\n", d, p.Series[k].stroke())
		}
	}
	b.WriteString("</g>\n")
}

// legend writes each series' entry from left over width, its first line at
// y, on as many lines as they need; it returns the number of lines.
func (p *Panel) legend(b *bytes.Buffer, left, width, y float64) int {
	x, line := left, 0
	for _, s := range p.Series {
		w := 22 + charWidth*float64(len([]rune(s.Name))) + 14
		if x > left && x+w > left+width {
			x, line = left, line+1
		}
		ly := y + float64(line)*legendLine
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" %s/>`+"\n", x, ly, x+18, ly, s.stroke())
		text(b, x+22, ly+4, 11, "start", "#222", "", s.Name)
		x += w
	}
	return line + 1
}

// path returns the SVG path of pts, a new subpath after each gap; a point
// alone between gaps is a dot.
func path(pts []Point, sx, sy scale) string {
	var b strings.Builder
	run := 0
	for _, pt := range append(pts[:len(pts):len(pts)], Point{Y: math.NaN()}) { // the gap after the last point ends its run
		px, okx := sx.px(pt.X)
		py, oky := sy.px(pt.Y)
		switch {
		case !okx || !oky:
			if run == 1 {
				b.WriteString("h0.01")
			}
			run = 0
			continue
		case run == 0:
			fmt.Fprintf(&b, "M%.1f %.1f", px, py)
		default:
			fmt.Fprintf(&b, "L%.1f %.1f", px, py)
		}
		run++
	}
	return b.String()
}

// stroke returns the stroke attributes of s.
func (s Series) stroke() string {
	a := fmt.Sprintf(`stroke="%s" stroke-width="%.1f"`, s.Color, cmp.Or(s.Width, 1.6))
	if s.Dashed {
		a += ` stroke-dasharray="6 4"`
	}
	return a
}

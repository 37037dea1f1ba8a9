package svgchart

import (
	"bytes"
	"fmt"
	"strings"
)

// legendItem is a legend entry placed on its line.
type legendItem struct {
	s    *Series
	x    float64
	line int
}

// write draws panel i in the box at x, y of size w, h.
func (p *Panel) write(b *bytes.Buffer, i int, x, y, w, h float64) {
	left, plotW := x+leftMargin, w-leftMargin-rightMargin
	items, lines := p.legend(left, plotW)
	top := y + titleLine + float64(lines)*legendLine + 8
	bottom := y + h - bottomMargin
	text(b, left, y+13, 12, "start", "#111", bold, p.Title)

	sx := newScale(p.X, left, left+plotW)
	sy := newScale(p.Y, bottom, top)

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
	ly := (top + bottom) / 2
	text(b, x+11, ly, 11, "middle", "#333", fmt.Sprintf(`transform="rotate(-90 %.1f %.1f)"`, x+11, ly), p.Y.Label)

	// The lines, clipped to the plot.
	fmt.Fprintf(b, `<clipPath id="plot%d"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>`+"\n", i, left, top, plotW, bottom-top)
	fmt.Fprintf(b, `<g clip-path="url(#plot%d)" fill="none" stroke-linejoin="round" stroke-linecap="round">`+"\n", i)
	for k := range p.Series {
		s := &p.Series[k]
		d := path(s.Points, sx, sy)
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
	width := s.Width
	if width <= 0 {
		width = 1.6
	}
	a := fmt.Sprintf(`stroke="%s" stroke-width="%.1f"`, s.Color, width)
	if s.Dashed {
		a += ` stroke-dasharray="6 4"`
	}
	return a
}

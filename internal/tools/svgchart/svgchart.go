package svgchart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
)

// Point is one sample of a series; a NaN Y is a gap.
type Point struct{ X, Y float64 }

// Series is one line of a panel.
type Series struct {
	Name   string  // its entry in the panel's legend
	Color  string  // a CSS colour, written as given (#rrggbb)
	Width  float64 // of the stroke, in px (0: 1.6)
	Dashed bool    // as for a target or a limit
	Points []Point
}

// Panel is one chart of the grid.
type Panel struct {
	Title  string
	X, Y   Axis
	Series []Series
}

// Chart is a titled grid of panels.
type Chart struct {
	Title     string
	Subtitles []string // smaller lines under the title
	Columns   []string // head the grid's columns; their number is its width
	Panels    []Panel  // laid out row by row
}

// Layout, in px.
const (
	width        = 1200 // of the chart
	panelHeight  = 190  // its title, legend and axis labels included
	outer        = 12   // around the grid
	gap          = 20   // between columns
	leftMargin   = 62   // of a plot: the Y ticks and label
	rightMargin  = 14   // of a plot
	bottomMargin = 36   // the X ticks and label
	titleLine    = 18   // a panel's title
	legendLine   = 15   // one line of a legend
	charWidth    = 6.2  // estimated width of a character at 11 px
)

// Write writes c as a standalone SVG document to w.
func (c *Chart) Write(w io.Writer) error {
	cols := max(len(c.Columns), 1)
	head := 58 + 17*len(c.Subtitles)
	height := head + (len(c.Panels)+cols-1)/cols*panelHeight + outer

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	text(&b, outer, 24, 18, "start", "#111", bold, c.Title)
	for i, s := range c.Subtitles {
		text(&b, outer, float64(42+17*i), 12, "start", "#555", "", s)
	}
	cw := (float64(width) - 2*outer - float64(cols-1)*gap) / float64(cols)
	for i, t := range c.Columns {
		text(&b, outer+float64(i)*(cw+gap), float64(head-8), 14, "start", "#111", bold, t)
	}
	for i := range c.Panels {
		x := outer + float64(i%cols)*(cw+gap)
		y := float64(head + (i/cols)*panelHeight)
		c.Panels[i].write(&b, i, x, y, cw, panelHeight)
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// text writes one text element, with the attributes of extra (a weight, a
// turn: each with a space before it) after the usual ones.
func text(b *bytes.Buffer, x, y float64, size int, anchor, color, extra, s string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s" fill="%s"%s>`, x, y, size, anchor, color, extra)
	_ = xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

// bold is the extra attribute of a bold text.
const bold = ` font-weight="bold"`

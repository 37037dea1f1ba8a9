package svgchart

import (
	"bytes"
	"fmt"
	"io"
)

// Point is one sample of a series; a NaN or infinite Y is a gap.
type Point struct{ X, Y float64 }

// Series is one line of a panel.
type Series struct {
	// Name is the line's entry in the panel's legend ("": none).
	Name string
	// Color is a CSS colour, written as given (#rrggbb).
	Color string
	// Width is the stroke width in px (0: 1.6).
	Width float64
	// Dashed draws the line dashed, as for a target or a limit.
	Dashed bool
	Points []Point
}

// Axis is the scale of one dimension of a panel.
type Axis struct {
	// Label names the axis and its unit.
	Label string
	// Min and Max are the range (Max > Min); the caller picks it, as
	// NiceTicks rounds it.
	Min, Max float64
	// Log makes the scale logarithmic (base 10); the range must then be
	// positive (values at or below 0 are gaps).
	Log bool
}

// Panel is one chart of the grid.
type Panel struct {
	Title  string
	X, Y   Axis
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
	rightMargin  = 14  // of a plot
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
	text(&b, outer, 24, 18, "start", "#111", bold, c.Title)
	for i, s := range c.Subtitles {
		text(&b, outer, float64(42+17*i), 12, "start", "#555", "", s)
	}
	cw := (float64(width) - 2*outer - float64(cols-1)*gap) / float64(cols)
	if len(c.ColumnTitles) > 0 {
		for i, t := range c.ColumnTitles {
			if i < cols {
				text(&b, outer+float64(i)*(cw+gap), float64(head-8), 14, "start", "#111", bold, t)
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

// Package svgchart writes the line charts of "loadgen adaptive" as
// hand-made SVG: a title, a grid of panels (a column per run, a row per
// figure), each with its own axes, ticks, grid lines, legend and clipped
// lines. An axis runs from 0 at round ticks, or over whole decades on a log
// scale. A point whose Y is NaN is a gap. It uses no library and no fonts
// of its own: the text is set in the viewer's sans-serif, and the legends'
// widths are estimated.
package svgchart

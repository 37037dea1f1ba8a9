// Package svgchart writes line charts as hand-made SVG, for the pictures
// the measurements commit under bench/: a title, a grid of panels (one per
// figure, a column per run), each with its own axes, ticks, grid lines,
// legend and clipped lines. An axis is linear or logarithmic over the range
// given. A point whose Y is NaN or infinite is a gap in its line.
//
// It uses no library and no fonts of its own: the text is set in the
// viewer's sans-serif, and its widths (for the legends) are estimated. A
// Chart is plain data; Write only reads it, so one Chart may be written
// from several goroutines at once.
package svgchart

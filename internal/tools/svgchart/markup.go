package svgchart

import (
	"bytes"
	"encoding/xml"
	"fmt"
)

// text writes one text element, with more attributes when extra is not
// empty (a weight, a turn).
func text(b *bytes.Buffer, x, y float64, size int, anchor, color, extra, s string) {
	if s == "" {
		return
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s" fill="%s"`, x, y, size, anchor, color)
	if extra != "" {
		b.WriteString(" " + extra)
	}
	b.WriteString(">")
	_ = xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

// bold is the extra attribute of a bold text.
const bold = `font-weight="bold"`

package svgchart

import (
	"bytes"
	"encoding/xml"
	"fmt"
)

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

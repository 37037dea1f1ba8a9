package svgchart

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestLinear(t *testing.T) {
	tests := []struct {
		name string
		top  float64
		want []float64
	}{
		{"round up", 97, []float64{0, 20, 40, 60, 80, 100}},
		{"tenths", 1, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{"thousands", 3000, []float64{0, 1000, 2000, 3000}},
		{"empty range", 0, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Linear("", tc.top).Ticks; !slices.Equal(got, tc.want) {
				t.Fatalf("Linear(%g) ticks %v, want %v", tc.top, got, tc.want)
			}
		})
	}
}

func TestDecades(t *testing.T) {
	tests := []struct {
		name     string
		from, to int
		want     []float64
	}{
		{"three decades", 1, 4, []float64{10, 100, 1000, 10000}},
		{"below one", -1, 1, []float64{0.1, 1, 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if a := Decades("ms", tc.from, tc.to); !a.Log || !slices.Equal(a.Ticks, tc.want) {
				t.Fatalf("Decades(%d, %d) = %+v, want ticks %v", tc.from, tc.to, a, tc.want)
			}
		})
	}
}

func TestTickFormat(t *testing.T) {
	tests := []struct {
		ticks []float64
		v     float64
		want  string
	}{
		{[]float64{0, 0.2}, 0.4, "0.4"},
		{[]float64{0, 500}, 2500, "2500"},
		{[]float64{0, 5000}, 15000, "15\u2009000"},
		{[]float64{0, 5000}, 1_250_000, "1\u2009250\u2009000"},
		{[]float64{0.5, 1}, 12345.5, "12\u2009345.5"},
		{[]float64{1, 10, 100}, 100, "100"},
		{[]float64{0.1, 1, 10}, 0.1, "0.1"},
	}
	for _, tc := range tests {
		if got := tickFormat(tc.ticks)(tc.v); got != tc.want {
			t.Errorf("tickFormat(%v)(%g) = %q, want %q", tc.ticks, tc.v, got, tc.want)
		}
	}
}

// element is an SVG element as the test reads it back.
type element struct {
	name  string
	attrs map[string]string
	text  string
}

// parse reads svg back as XML, failing t when it is not well formed, and
// returns its elements in document order.
func parse(t *testing.T, svg []byte) []element {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var els []element
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return els
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := element{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			els = append(els, e)
		case xml.CharData:
			if len(els) > 0 {
				els[len(els)-1].text += string(tok)
			}
		}
	}
}

// TestWrite draws two columns of panels with a gap, a dashed target and a
// log axis, and reads the SVG back.
func TestWrite(t *testing.T) {
	nan := math.NaN()
	latency := Panel{
		Title: "latency <p95> & target",
		X:     Linear("s", 4),
		Y:     Decades("ms", 1, 4),
		Series: []Series{
			{Name: "p95", Color: "#c00", Points: []Point{{0, 20}, {1, 300}, {2, nan}, {3, 4000}, {4, 50000}}},
			{Name: "target", Color: "#888", Dashed: true, Points: []Point{{0, 250}, {4, 250}}},
			{Name: "none", Color: "#000", Points: []Point{{0, -1}, {1, 0}}}, // nothing a log scale can place
		},
	}
	users := Panel{
		Title: "users",
		X:     Linear("s", 4),
		Y:     Linear("users", 1000),
		Series: []Series{
			{Name: "waiting", Color: "#06c", Points: []Point{{0, 0}, {1, 970}, {2, 400}}},
			{Name: "rate", Color: "#080", Points: []Point{{0, 300}, {1, nan}, {2, 1200}, {3, nan}}},
		},
	}
	c := Chart{
		Title:     `adaptive "admission" <demo>`,
		Subtitles: []string{"a & b"},
		Columns:   []string{"left", "right"},
		Panels:    []Panel{latency, users, users, latency},
	}
	var b bytes.Buffer
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	els := parse(t, b.Bytes())
	if els[0].name != "svg" || els[0].attrs["width"] != "1200" || els[0].attrs["height"] != "467" {
		t.Fatalf("root %+v", els[0])
	}
	var texts []string
	var paths []string
	for _, e := range els {
		switch e.name {
		case "text":
			texts = append(texts, strings.TrimSpace(e.text))
		case "path":
			paths = append(paths, e.attrs["d"])
		}
	}
	for _, want := range []string{`adaptive "admission" <demo>`, "a & b", "left", "right", "latency <p95> & target", "p95", "target", "waiting", "rate", "users", "ms", "10\u2009000"} {
		if !slices.Contains(texts, want) {
			t.Errorf("no text %q in %q", want, texts)
		}
	}
	// Per panel pair: p95 (two runs split by the gap), target; waiting,
	// rate (two dots); the series with no placeable point has no path.
	if len(paths) != 8 {
		t.Fatalf("%d paths, want 8: %q", len(paths), paths)
	}
	if n := strings.Count(paths[0], "M"); n != 2 {
		t.Errorf("p95 path %q: %d subpaths, want 2 (split at the gap)", paths[0], n)
	}
	if n := strings.Count(paths[3], "h0.01"); n != 2 {
		t.Errorf("rate path %q: want 2 dots", paths[3])
	}
	if !strings.Contains(b.String(), `stroke-dasharray="6 4"`) {
		t.Error("the target is not dashed")
	}
	if n := strings.Count(b.String(), "<clipPath"); n != 4 {
		t.Errorf("%d clip paths, want one a panel", n)
	}
}

// TestScale: a linear and a log axis map their range onto the plot, and a
// log scale places nothing at or below 0.
func TestScale(t *testing.T) {
	s := newScale(Linear("", 100), 100, 0)
	if px, ok := s.px(50); !ok || px != 50 || len(s.Ticks) != 6 {
		t.Fatalf("px(50) = %g, %v; ticks %v", px, ok, s.Ticks)
	}
	if _, ok := s.px(math.NaN()); ok {
		t.Fatal("NaN placed")
	}
	l := newScale(Decades("", 1, 4), 0, 300)
	if px, _ := l.px(100); math.Abs(px-100) > 1e-9 {
		t.Fatalf("log px(100) = %g, want 100", px)
	}
	if _, ok := l.px(0); ok {
		t.Fatal("a log scale placed 0")
	}
}

package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestSummaryRow pins the row scripts/bench.sh copies into bench/RESULTS.md.
func TestSummaryRow(t *testing.T) {
	tests := []struct {
		name      string
		fig, base float64
		want      string
	}{
		{"with a baseline", 50, 200, "summary | w | f | b | 0.25 | g |\n"},
		{"without a baseline", 50, 0, "summary | w | f | b | — | g |\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			Summary(&b, "w", "f", "b", tc.fig, tc.base, "g")
			if b.String() != tc.want {
				t.Fatalf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

func TestFormats(t *testing.T) {
	tests := []struct{ got, want string }{
		{Millis(1500 * time.Microsecond), "1.5ms"},
		{Millis(0), "0.0ms"},
		{Bytes(1536), "1.5KiB"},
		{Bytes(3 << 20), "3.0MiB"},
		{Bytes(-2 << 20), "-2.0MiB"},
		{OneLine(" a\n\tb  c "), "a b c"},
		{OneLine(strings.Repeat("x", 201)), strings.Repeat("x", 200) + "…"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestMachineHeader(t *testing.T) {
	var b bytes.Buffer
	Machine(&b, "cost")
	lines := strings.Split(b.String(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "loadgen cost  ") || !strings.HasPrefix(lines[1], "machine  NumCPU ") {
		t.Fatalf("header:\n%s", b.String())
	}
}

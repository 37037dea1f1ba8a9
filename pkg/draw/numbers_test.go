package draw

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// TestNumbersCompactForm: a draw of 100,000 entries' numbers take 7 bytes
// each, ascending, read back as the chain's numbers sorted; the figure
// next to the JSON of the whole chain is logged (go test -v -run
// CompactForm ./pkg/draw). Bytes not of whole numbers, or out of order,
// are refused.
func TestNumbersCompactForm(t *testing.T) {
	const n = 100_000
	seed := Seed{1, 2, 3}
	es := make([]Entry, n)
	for i := range es {
		es[i] = SaltedEntry(Salt([SaltKeySize]byte{5}, fmt.Sprint(i)), fmt.Sprint(i))
	}
	c, _, err := BuildChain("ev", 1, seed, &PublicSource{Name: "drand", Round: 1}, []byte{0xbe, 0xef}, es)
	if err != nil {
		t.Fatal(err)
	}
	b := c.AppendNumbers(nil)
	full, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d entries: compact numbers %d bytes (%.2f MB), the whole chain's JSON %d bytes (%.2f MB)", n, len(b), float64(len(b))/1e6, len(full), float64(len(full))/1e6)
	if len(b) != NumberBytes*n || len(b) > 1_000_000 {
		t.Fatalf("%d bytes for %d numbers", len(b), n)
	}
	got, err := ParseNumbers(b)
	want := slices.Sorted(slices.Values(c.Numbers))
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("read back: %v", err)
	}
	for name, bad := range map[string][]byte{"a cut number": b[:NumberBytes*2+3], "out of order": append(slices.Clone(b[NumberBytes:2*NumberBytes]), b[:NumberBytes]...)} {
		if _, err := ParseNumbers(bad); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}

// Package oddtext makes random strings for the tests of hand-written JSON
// encoders: plain printable ASCII, sometimes with the characters
// encoding/json escapes or replaces (invalid UTF-8 included), or that take
// more than one byte.
package oddtext

import "math/rand/v2"

// Runes are the odd characters, with a few plain ones between.
var Runes = []string{"\"", "\\", "/", "<", ">", "&", "\x00", "\x1f", "\n", "\t", "\x7f", "é", "\u2028", "\u2029", "\ufffd", "😀", "\xff", "\xc3", "a", "Z", "0", "-", "_", ".", ":", "@", " ", "?", "=", "%"}

// String returns a string of at most 30 bytes (a quarter of them empty),
// a third of them with odd characters.
func String(r *rand.Rand) string {
	if r.IntN(4) == 0 {
		return ""
	}
	n := r.IntN(30)
	b := make([]byte, 0, n*2)
	odd := r.IntN(3) == 0
	for range n {
		if odd && r.IntN(4) == 0 {
			b = append(b, Runes[r.IntN(len(Runes))]...)
			continue
		}
		b = append(b, byte(0x20+r.IntN(0x5f)))
	}
	return string(b)
}

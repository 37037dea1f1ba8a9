package draw

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// The published draw numbers in compact form (docs/api.md, "The public
// draw"): what a visitor's check needs of a chain draw besides the few
// values of the public event (seed, commitment, public value, root,
// count) and their own receipt. Each number in NumberBytes big-endian
// bytes (a number has Bits bits), all in ascending order: about 700 kB
// at 100,000 entries, where the JSON of the whole chain is about 8 MB.

// NumberBytes is the width of one number in the compact form.
const NumberBytes = (Bits + 7) / 8

// AppendNumbers appends c's numbers in compact form to dst: ascending,
// NumberBytes each.
func (c *Chain) AppendNumbers(dst []byte) []byte {
	sorted := slices.Clone(c.Numbers)
	slices.Sort(sorted)
	dst = slices.Grow(dst, NumberBytes*len(sorted))
	var b [8]byte
	for _, n := range sorted {
		binary.BigEndian.PutUint64(b[:], n)
		dst = append(dst, b[8-NumberBytes:]...)
	}
	return dst
}

// ParseNumbers reads numbers in compact form (AppendNumbers), checking
// their width and order.
func ParseNumbers(b []byte) ([]uint64, error) {
	if len(b)%NumberBytes != 0 {
		return nil, fmt.Errorf("draw: %d bytes are not numbers of %d bytes", len(b), NumberBytes)
	}
	out := make([]uint64, len(b)/NumberBytes)
	var w [8]byte
	for i := range out {
		copy(w[8-NumberBytes:], b[i*NumberBytes:])
		out[i] = binary.BigEndian.Uint64(w[:])
		if out[i] >= 1<<Bits || (i > 0 && out[i] < out[i-1]) {
			return nil, errors.New("draw: the numbers are not ascending numbers of 52 bits")
		}
	}
	return out, nil
}

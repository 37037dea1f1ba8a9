package loadgen

import (
	"testing"
	"time"
)

func TestQuietPhaseFindsTheLongestGap(t *testing.T) {
	for _, tc := range []struct {
		name           string
		busy           [2]int // buckets [from, to) where frames were stamped
		phase, quietMs int64
	}{
		{"rounds at the start of the interval", [2]int{0, 50}, 3125, 3750},
		{"the gap wraps around the interval's end", [2]int{100, 150}, 625, 3750},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fleet{cfg: socketsConfig{interval: 5 * time.Second}}
			for b := tc.busy[0]; b < tc.busy[1]; b++ {
				f.phases[b].Store(true)
			}
			phase, quiet, ok := f.quietPhase()
			if !ok || phase != tc.phase || quiet != tc.quietMs {
				t.Fatalf("quietPhase = %d, %d, %v; want %d, %d", phase, quiet, ok, tc.phase, tc.quietMs)
			}
		})
	}
	f := &fleet{cfg: socketsConfig{interval: 5 * time.Second}}
	if _, _, ok := f.quietPhase(); ok {
		t.Fatal("a quiet phase with no frames seen")
	}
}

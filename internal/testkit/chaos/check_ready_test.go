package chaos

import (
	"strings"
	"testing"
	"time"
)

// A service down during its fault and its grace is explained; down long
// after, it is not, and the report says for how long and what was seen.
func TestReadinessOutsideItsFaults(t *testing.T) {
	h := &History{}
	h.AddFault(Fault{Kind: Kill, Target: "g1", Role: Gateway, Start: at(10_000), Healed: at(12_000)})
	h.AddFault(Fault{Kind: Partition, Target: "g1", Role: Gateway, Start: at(150_000), Healed: at(152_000)})
	h.AddFault(Fault{Kind: Pause, Target: "g2", Role: Gateway, Start: at(0), Healed: at(1_000)})
	for _, x := range []Ready{
		{Target: "g1", At: at(0), OK: true},
		{Target: "g1", At: at(10_500), Why: "refused"},
		{Target: "g1", At: at(13_000), OK: true},
		{Target: "g1", At: at(100_000), Why: "timeout"},
		{Target: "g1", At: at(160_000), Why: "503 store_unavailable"},
		{Target: "g1", At: at(200_000), OK: true},
		{Target: "g2", At: at(0), Why: "paused"},
		{Target: "g2", At: at(2_000), OK: true},
		{Target: "p1", At: at(0), OK: true},
	} {
		h.AddReady(x)
	}
	r := Check(h, Config{GapLimit: 2 * time.Second, FaultGrace: 3 * time.Second})
	if len(r.Unready) != 2 {
		t.Fatalf("unready services %+v, want g1 and g2", r.Unready)
	}
	g1, g2 := r.Unready[0], r.Unready[1]
	// g1: 2.5 s in the kill (explained), 100 s from 100 s of which 150–182
	// is the partition and its grace: 50 s + 18 s unexplained.
	if g1.Target != "g1" || g1.Total != 102_500*time.Millisecond || g1.Unexplained != 68*time.Second {
		t.Errorf("g1 = %+v, want 102.5 s not ready, 68 s unexplained", g1)
	}
	if g1.Longest != 50*time.Second || !g1.LongestFrom.Equal(at(100_000)) {
		t.Errorf("g1 longest = %v from %v, want 50 s from %v", g1.Longest, g1.LongestFrom, at(100_000))
	}
	if g1.Why["timeout"] != 50*time.Second || g1.Why["503 store_unavailable"] != 18*time.Second || g1.Why["refused"] != 0 {
		t.Errorf("g1 why = %v", g1.Why)
	}
	if g2.Target != "g2" || g2.Total != 2*time.Second || g2.Unexplained != 0 || g2.Longest != 0 {
		t.Errorf("g2 = %+v, want 2 s not ready, all explained", g2)
	}
	md := r.Markdown()
	if !strings.Contains(md, "| g1 | 102.50 s | 68.00 s | 50.00 s from") || !strings.Contains(md, "timeout 50.00 s; 503 store_unavailable 18.00 s") {
		t.Errorf("report lacks g1's readiness row:\n%s", md)
	}
}

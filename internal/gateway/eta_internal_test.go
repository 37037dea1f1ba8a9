package gateway

import (
	"encoding/json"
	"testing"

	"github.com/waitq/waitq/internal/queue"
)

// TestEstimateNeverPromisesLessThanTheHolds: with a slot free the ETA is
// position ÷ rate as before; with every slot taken it is at least the time
// until a slot frees if holders keep theirs, at least what the rate in
// force allows, and a range up to a slower measured pace.
func TestEstimateNeverPromisesLessThanTheHolds(t *testing.T) {
	const now = 1_000_000
	unlimited := func(perSecond float64) pace { return pace{perSecond: perSecond, limit: -1, stay: 60} }
	for _, c := range []struct {
		name     string
		position int64
		p        pace
		slotAt   int64
		lo, hi   int64 // -1: nil
	}{
		// The demo shop's walk: one slot, held for a minute by the first
		// visitor, admitted 5 s before; one admission in 5 s measured. The
		// old estimate said 5 s.
		{"the demo: the only slot held 55 s more", 1, unlimited(0.2), now + 55_000, 55, -1},
		{"a slot free: position over the rate", 10, unlimited(2), 0, 5, -1},
		{"a slot free, no rate known", 3, unlimited(0), 0, -1, -1},
		{"slots taken, no rate known: the holds say", 3, unlimited(0), now + 30_500, 31, -1},
		{"slots taken, the rate in force slower than the holds", 100, pace{perSecond: 1, limit: 1}, now + 10_000, 100, -1},
		{"slots taken, a slower measured pace: a range", 20, pace{perSecond: 0.1, limit: 1, stay: 300}, now + 12_000, 20, 200},
		{"slots taken, a much slower pace: at most one stay more", 20, pace{perSecond: 0.01, limit: 1, stay: 60}, now + 12_000, 20, 80},
		{"slots taken, the hold unknown: no range", 20, pace{perSecond: 0.1, limit: 1}, now + 12_000, 20, -1},
		{"the stay has ended, not yet expired: any moment", 1, unlimited(1), now - 500, 0, 1},
		{"admission stopped", 1, pace{}, now + 10_000, -1, -1},
		{"not waiting", 0, unlimited(1), now + 10_000, -1, -1},
	} {
		lo, hi := estimate(c.position, c.p, c.slotAt, now)
		if val(lo) != c.lo || val(hi) != c.hi {
			t.Errorf("%s: %d..%d, want %d..%d", c.name, val(lo), val(hi), c.lo, c.hi)
		}
	}
}

func val(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// TestAppendStatusWithARange: a frame with a range is byte for byte what
// encoding/json writes.
func TestAppendStatusWithARange(t *testing.T) {
	lo, hi := int64(20), int64(200)
	f := StatusFrame{Type: "status", EventID: "e1", UserID: "u1", State: StateWaiting, Position: 20, Total: 30, ETASeconds: &lo, ETAMaxSeconds: &hi, TS: 5}
	want, _ := json.Marshal(f)
	if got := appendStatus(nil, &f); string(got) != string(want) {
		t.Fatalf("appendStatus = %s, want %s", got, want)
	}
}

func TestAdmissionsUntilCountsAwayTurns(t *testing.T) {
	for _, c := range []struct {
		name     string
		p        pace
		position int64
		want     int64
	}{
		{"nobody away", pace{admittedTotal: 100}, 11, 11},
		// 100 turns from the head so far, 20 of them away: 8 of the 10
		// ahead will be admitted; 4 called now, none resolved: all 4 go
		// first.
		{"away ahead, called unresolved", pace{admittedTotal: 80, turns: queue.Turns{Called: 4, CalledTotal: 20}}, 11, 1 + 8 + 4},
		// Of 10 resolved calls, 5 were claimed: half the 4 called now.
		{"half the calls claimed", pace{admittedTotal: 85, turns: queue.Turns{Called: 4, CalledTotal: 20, ClaimedTotal: 5, LapsedTotal: 5}}, 11, 1 + 8 + 2},
		{"first in line", pace{admittedTotal: 80, turns: queue.Turns{Called: 2, CalledTotal: 20}}, 1, 3},
	} {
		if got := c.p.admissionsUntil(c.position); got != c.want {
			t.Errorf("%s: admissionsUntil(%d) = %d, want %d", c.name, c.position, got, c.want)
		}
	}
}

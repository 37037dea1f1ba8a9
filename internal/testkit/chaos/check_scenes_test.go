package chaos

import (
	"strings"
	"testing"
	"time"
)

// The invariants of the campaign's scenes (admin changes, a rebuild, the
// guard and its origin, a broker outage longer than a hold): each test
// breaks one promise in the clean history and expects exactly that one
// violation, and checks that the history that keeps it passes.

// expect runs the checker and wants exactly the violations containing each
// of want (none when want is empty).
func expect(t *testing.T, h *History, cfg Config, want ...string) *Report {
	t.Helper()
	r := Check(h, cfg)
	v := r.Violations()
	if len(v) != len(want) {
		t.Fatalf("violations %q, want %d: %q", v, len(want), want)
	}
	for i, w := range want {
		if !strings.Contains(v[i], w) {
			t.Fatalf("violation %q, want one with %q", v[i], w)
		}
	}
	return r
}

// holders replaces the event's samples by n[i] at from+i*5 ms.
func holders(h *History, from int64, n ...int64) {
	for i, x := range n {
		h.AddHolders(Holders{Event: "e", At: at(from + int64(i)*5), N: x})
	}
}

func change(sent, answered int64, outcome Outcome, capacity int64, state string) AdminChange {
	a := AdminChange{Event: "e", Sent: at(sent), Outcome: outcome, Capacity: capacity, Rate: -1, State: state}
	if answered > 0 {
		a.Answered = at(answered)
	}
	return a
}

// A lowered capacity evicts nobody: the holders above it stay; but nobody
// is admitted while holders ≥ the capacity in force.
func TestCapacityInForce(t *testing.T) {
	t.Run("holders above a lowered capacity stay", func(t *testing.T) {
		h, cfg := clean()
		h.AddAdmin(change(3000, 3010, "200", 1, ""))
		holders(h, 7000, 2, 2, 1, 1)
		expect(t, h, cfg)
	})
	t.Run("admitted while holders ≥ the lowered capacity", func(t *testing.T) {
		h, cfg := clean()
		h.AddAdmin(change(3000, 3010, "200", 1, ""))
		holders(h, 7000, 2, 1, 2)
		expect(t, h, cfg, "admitted past the capacity in force: e: holders rose from 1 to 2")
	})
	t.Run("a lowering with no answer may not have happened", func(t *testing.T) {
		h, cfg := clean()
		h.AddAdmin(change(3000, 0, NoAnswer, 1, ""))
		holders(h, 7000, 2, 1, 2)
		expect(t, h, cfg)
	})
	t.Run("raised back: room again", func(t *testing.T) {
		h, cfg := clean()
		h.AddAdmin(change(3000, 3010, "200", 1, ""))
		h.AddAdmin(change(6500, 6510, "200", 2, ""))
		holders(h, 7000, 2, 1, 2)
		expect(t, h, cfg)
	})
	t.Run("over a lowered capacity long after it", func(t *testing.T) {
		h, cfg := clean()
		h.AddAdmin(change(3000, 3010, "200", 1, ""))
		holders(h, 40_000, 2)
		expect(t, h, cfg, "over capacity: e: 2 holders")
	})
}

func TestNobodyAdmittedWhilePaused(t *testing.T) {
	h, cfg := clean()
	h.AddAdmin(change(6100, 6110, "200", -1, "paused"))
	holders(h, 7000, 1, 2)
	expect(t, h, cfg, "admitted past the capacity in force: e: holders rose from 1 to 2 between")
	h, cfg = clean()
	h.AddAdmin(change(6100, 6110, "200", -1, "paused"))
	h.AddAdmin(change(6900, 6999, "200", -1, "open")) // resumed: the step may run before the answer
	holders(h, 7000, 1, 2)
	expect(t, h, cfg)
}

// Across a rebuild (FLUSHALL, then the rebuild writes the holders back)
// the holders may come back to what they were, not beyond it and the
// capacity in force.
func TestRebuildBringsBackNoMoreHolders(t *testing.T) {
	build := func(before int64) (*History, Config) {
		h, cfg := clean()
		h.AddAdmin(change(3000, 3010, "200", 1, ""))
		h.AddFault(Fault{Kind: Rebuild, Target: "redis", Role: Redis, Start: at(7000), Healed: at(8000)})
		h.AddReady(Ready{Target: "redis", At: at(8001), OK: true})
		h.AddCanary(Canary{Sent: at(8100), Acked: at(8110), Seen: at(8120)})
		holders(h, 6995, before)
		holders(h, 7005, 0, 0) // emptied
		holders(h, 8000, 2)
		return h, cfg
	}
	h, cfg := build(2)
	expect(t, h, cfg)
	h, cfg = build(1)
	expect(t, h, cfg, "admitted past the capacity in force: e: 2 holders after a rebuild")
}

// visitors adds origin requests: user at ms with the hold of their
// admission (the clean history's a, b, c: steps at 100, 200, 300).
func visit(h *History, user string, ms ...int64) {
	step := map[string]int64{"a": 100, "b": 200, "c": 300}[user]
	for _, m := range ms {
		h.AddOrigin(OriginRequest{Event: "e", User: user, Expires: t0.UnixMilli() + step + holdMs, Path: "/shop", At: at(m)})
	}
}

func guardConfig(cfg Config) Config {
	cfg.TokenSkew, cfg.ReleasedGrace = 2*time.Second, 4*time.Second
	return cfg
}

func TestOriginSeesOnlyAdmittedVisitors(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(h *History)
		want   string
	}{
		{"no identity", func(h *History) {
			h.AddOrigin(OriginRequest{Event: "e", Path: "/static/..;/orders", At: at(500)})
		}, "without the guard's identity"},
		{"a forged identity", func(h *History) {
			h.AddOrigin(OriginRequest{Event: "e", User: "mallory", Expires: t0.UnixMilli() + 100 + holdMs, Path: "/shop", At: at(500)})
		}, "mallory with a hold ending"},
		{"another event's admission", func(h *History) {
			h.AddJoin(Join{Event: "other", User: "z", At: at(0), Outcome: "202", Stamp: t0.UnixMilli()})
			h.AddAdmission(admitted("other", "z", 100, 103))
			h.AddOrigin(OriginRequest{Event: "e", User: "z", Expires: t0.UnixMilli() + 100 + holdMs, Path: "/shop", At: at(500)})
		}, "z with a hold ending"},
		{"after the hold", func(h *History) {
			visit(h, "b", 200+holdMs+3500)
		}, "after its hold ended"},
		{"after the release", func(h *History) {
			h.AddRelease(Release{Event: "e", User: "b", At: at(5000), Via: "http", Outcome: "200", Released: true, Answered: at(5100), ExpiresAt: t0.UnixMilli() + 200 + holdMs})
			visit(h, "b", 9500)
		}, "after its release was answered"},
		{"more visitors than the capacity", func(h *History) {
			visit(h, "a", 350, 360)
			visit(h, "b", 350, 370)
			visit(h, "c", 355)
		}, "origin: over capacity: e: 3 admitted visitors"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, cfg := clean()
			c.break_(h)
			expect(t, h, guardConfig(cfg), c.want)
		})
	}
	t.Run("clean", func(t *testing.T) {
		h, cfg := clean()
		visit(h, "a", 350, 360)
		visit(h, "b", 350, 370)
		visit(h, "c", 380, 300+holdMs+1500) // within the guard's skew
		// b's release answered, then used within one poll of the list.
		h.AddRelease(Release{Event: "e", User: "b", At: at(5000), Via: "http", Outcome: "200", Released: true, Answered: at(5100), ExpiresAt: t0.UnixMilli() + 200 + holdMs})
		visit(h, "b", 7000)
		h.AddGuard(GuardRequest{Event: "e", User: "a", Kind: "enter", At: at(340), Outcome: "302"})
		h.AddGuard(GuardRequest{Event: "e", User: "q", Kind: "forged", At: at(340), Outcome: "302"})
		r := expect(t, h, guardConfig(cfg))
		if r.OriginMax != 2 || r.OriginRequests != 7 || r.GuardRequests["forged"]["302"] != 1 {
			t.Errorf("origin max %d, requests %d, guard %v", r.OriginMax, r.OriginRequests, r.GuardRequests)
		}
		md := r.Markdown()
		for _, want := range []string{"| most admitted visitors at the origin at once | 2 |", "| guard forged | 302 | 1 |"} {
			if !strings.Contains(md, want) {
				t.Errorf("the table lacks %q:\n%s", want, md)
			}
		}
	})
	t.Run("a release the guard could not hear of", func(t *testing.T) {
		h, cfg := clean()
		h.AddRelease(Release{Event: "e", User: "b", At: at(5000), Via: "http", Outcome: "200", Released: true, Answered: at(5100), ExpiresAt: t0.UnixMilli() + 200 + holdMs})
		h.AddFault(Fault{Kind: Pause, Target: "g2", Role: Gateway, Start: at(6000), Healed: at(7000)})
		h.AddReady(Ready{Target: "g2", At: at(7001), OK: true})
		h.AddCanary(Canary{Sent: at(7100), Acked: at(7110), Seen: at(7120)})
		visit(h, "b", 9500)
		expect(t, h, guardConfig(cfg))
	})
}

// Nobody loses a turn they were never told of: a client in touch all
// along that is told its hold ended was told of the admission first.
func TestNoTurnEndsUntold(t *testing.T) {
	h, cfg := clean()
	h.AddExpired(Expired{Event: "e", User: "d", At: at(5000), Transport: "ws"})
	expect(t, h, cfg, "turn lost untold: e/d (ws) told at")

	h, cfg = clean()
	h.AddExpired(Expired{Event: "e", User: "d", At: at(5000), Transport: "sse"})
	h.AddGap(Gap{Event: "e", User: "d", From: at(9000), To: at(15000)}) // after: no excuse
	expect(t, h, cfg, "turn lost untold: e/d (sse)", "status gap: e/d")

	h, cfg = clean()
	h.AddExpired(Expired{Event: "e", User: "d", At: at(5000), Transport: "ws"})
	h.AddExpired(Expired{Event: "e", User: "a", At: at(12000), Transport: "ws"}) // a read its admission
	h.AddFault(Fault{Kind: Partition, Target: "g1", Role: Gateway, Start: at(0), Healed: at(200)})
	h.AddGap(Gap{Event: "e", User: "d", From: at(0), To: at(5000)}) // out of touch for half a hold
	if r := expect(t, h, cfg); r.Expired != 1 || r.Excused != 1 {
		t.Errorf("expired %d, excused %d, want 1 and 1", r.Expired, r.Excused)
	}
}

// A rebuild between the two samples rewrites the line: v, admitted with w
// but never told before Redis was emptied, is back at its own place after
// it (the 30-minute run's finding in the checker), which is no overtaking.
func TestARebuildBetweenTheSamplesIsNoOvertaking(t *testing.T) {
	build := func() *History {
		h := &History{}
		h.AddJoin(Join{Event: "e", User: "v", At: at(0), Outcome: "202", Stamp: 10})
		h.AddJoin(Join{Event: "e", User: "w", At: at(1), Outcome: "202", Stamp: 20})
		h.AddLine(Line{Event: "e", Sent: at(50), Got: at(51), Members: []Placed{{"v", 10}, {"w", 20}}})
		h.AddLine(Line{Event: "e", Sent: at(1500), Got: at(1501), Members: []Placed{{"v", 10}}})
		h.AddAdmission(admitted("e", "w", 100, 1400))
		return h
	}
	cfg := Config{Events: []EventSpec{{ID: "e", Capacity: 2, HoldMs: holdMs}},
		Final: map[string]Final{"e": {Waiting: nil, Served: map[string]int64{"w": t0.UnixMilli() + 100, "v": t0.UnixMilli() + 2000}, AdmittedTotal: 2}}}
	h := build()
	if v := Check(h, cfg).Violations(); len(v) != 1 || !strings.Contains(v[0], "order: e: w") {
		t.Fatalf("violations %q, want w's overtaking", v)
	}
	h = build()
	h.AddFault(Fault{Kind: Rebuild, Target: "redis", Role: Redis, Start: at(200), Healed: at(900)})
	h.AddCanary(Canary{Sent: at(1000), Acked: at(1001), Seen: at(1002)})
	if v := Check(h, cfg).Violations(); len(v) != 0 {
		t.Fatalf("violations: %q", v)
	}
}

// counts adds samples of the event's admittedTotal: total[i] read from
// from+i*step to 2 ms later.
func counts(h *History, from, step int64, total ...int64) {
	for i, n := range total {
		sent := from + int64(i)*step
		h.AddCount(AdmittedCount{Event: "e", Sent: at(sent), At: at(sent + 2), Total: n})
	}
}

func rateChange(sent, answered int64, rate int64) AdminChange {
	return AdminChange{Event: "e", Sent: at(sent), Answered: at(answered), Outcome: "200", Capacity: -1, Rate: rate}
}

// A rate lowered mid-run holds: at 120 a minute (2 a second, a burst of
// 10), 10 s admit at most 30; an unlimited event, or one whose unlimited
// setting may still be in force, is not checked.
func TestRateInForce(t *testing.T) {
	t.Run("within the rate", func(t *testing.T) {
		h, cfg := clean()
		h.AddAdmin(rateChange(10_000, 10_010, 120))
		counts(h, 12_000, 1000, 100, 110, 112, 114, 116, 118, 120, 122, 124, 126, 128)
		if r := expect(t, h, cfg); r.RateWindows == 0 {
			t.Fatal("no window checked")
		}
	})
	t.Run("past the rate", func(t *testing.T) {
		h, cfg := clean()
		h.AddAdmin(rateChange(10_000, 10_010, 120))
		counts(h, 12_000, 1000, 100, 110, 130, 150, 170)
		expect(t, h, cfg, "admitted past the rate in force: e: 30 admitted")
	})
	t.Run("a step with an old now beside a fault", func(t *testing.T) {
		h, cfg := clean()
		h.AddAdmin(rateChange(10_000, 10_010, 120))
		counts(h, 12_000, 1000, 100, 125) // 25 in a second: over 14, within 2 × 9 s + 10
		expect(t, h, cfg, "admitted past the rate in force: e: 25 admitted")
		h.AddFault(Fault{Kind: Pause, Target: "g1", Role: Gateway, Start: at(4_000), Healed: at(12_000)})
		h.AddReady(Ready{Target: "g1", At: at(12_100), OK: true})
		h.AddCanary(Canary{Sent: at(12_200), Acked: at(12_205), Seen: at(12_220)})
		expect(t, h, cfg)
	})
	t.Run("unlimited again", func(t *testing.T) {
		h, cfg := clean()
		h.AddAdmin(rateChange(10_000, 10_010, 120))
		h.AddAdmin(rateChange(13_500, 13_510, 0))
		counts(h, 14_000, 1000, 100, 150, 200)
		expect(t, h, cfg)
	})
	t.Run("a rate change not yet answered may not be in force", func(t *testing.T) {
		h, cfg := clean()
		h.AddAdmin(AdminChange{Event: "e", Sent: at(10_000), Outcome: NoAnswer, Capacity: -1, Rate: 120})
		counts(h, 12_000, 1000, 100, 150, 200)
		expect(t, h, cfg)
	})
	t.Run("not across a rebuild", func(t *testing.T) {
		h, cfg := clean()
		h.AddAdmin(rateChange(10_000, 10_010, 120))
		h.AddFault(Fault{Kind: Rebuild, Target: "redis", Start: at(12_500), Healed: at(12_600)})
		h.AddCanary(Canary{Sent: at(12_700), Acked: at(12_705), Seen: at(12_720)})
		counts(h, 12_000, 1000, 100, 3, 4)
		expect(t, h, cfg)
	})
}

// Every try of one visit may admit its user once: two admissions for the
// tries of one visit are a double admission; two visits may be admitted
// twice.
func TestOneAdmissionPerVisit(t *testing.T) {
	tries := func(h *History, visits ...string) {
		for i, v := range visits {
			h.AddJoin(Join{Event: "e", User: "v", At: at(int64(50 + i)), Outcome: "202", Stamp: t0.UnixMilli() + int64(51+i), Visit: v})
		}
	}
	for _, c := range []struct {
		name   string
		visits []string
		want   []string
	}{
		{"one visit admitted twice", []string{"k1", "k1"}, []string{"double admission: e/v: admitted 2 times"}},
		{"two visits admitted once each", []string{"k1", "k2"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, cfg := clean()
			tries(h, c.visits...)
			f := cfg.Final["e"]
			f.Served["v"] = t0.UnixMilli() + 30_000
			f.AdmittedTotal += 2
			cfg.Final["e"] = f
			h.AddAdmission(admitted("e", "v", 20_000, 20_001))
			h.AddAdmission(admitted("e", "v", 30_000, 30_001))
			expect(t, h, cfg, c.want...)
		})
	}
}

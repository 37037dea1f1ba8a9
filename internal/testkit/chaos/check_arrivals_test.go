package chaos

import (
	"slices"
	"strings"
	"testing"
)

// withArrivals gives clean()'s event an arrival window of 5 s (its holds
// last 10 s), every promise kept: a releases its slot at once (listed, not
// a no-show); b reaches the shop at 4.1 s, its arrival reported 200, and
// keeps the slot; c never comes and is freed just after its window closed
// (5.3 s); d2 reaches the shop and orders at 1.5 s (listed: its release);
// the history runs to 20 s.
func withArrivals() (*History, Config) {
	h, cfg := clean()
	cfg.Events[0].ArrivalMs = 5000
	end := func(step int64) int64 { return t0.UnixMilli() + step + holdMs }
	h.Releases[0].ExpiresAt = end(100)
	h.AddFreed(Freed{Event: "e", User: "a", ExpiresAt: end(100), At: at(450)})
	h.AddGuard(GuardRequest{Event: "e", User: "b", Kind: "enter", At: at(4090), Outcome: "302"})
	h.AddArrival(ArrivalReport{Event: "e", User: "b", ExpiresAt: end(200), Sent: at(4092), Outcome: "200"})
	h.AddOrigin(OriginRequest{Event: "e", User: "b", Expires: end(200), Path: "/shop", At: at(4100)})
	h.AddFreed(Freed{Event: "e", User: "c", ExpiresAt: end(300), At: at(5400)})
	h.AddLine(Line{Event: "e", Sent: at(20000), Got: at(20002)})
	// d2 reaches the shop and orders within the window: not at risk.
	h.AddJoin(Join{Event: "e", User: "d2", At: at(32), Outcome: "202", Stamp: t0.UnixMilli() + 32})
	h.AddAdmission(admitted("e", "d2", 400, 403))
	h.AddOrigin(OriginRequest{Event: "e", User: "d2", Expires: end(400), Path: "/shop", At: at(500)})
	h.AddRelease(Release{Event: "e", User: "d2", At: at(1500), Via: "guard", Outcome: "200", ExpiresAt: end(400)})
	h.AddFreed(Freed{Event: "e", User: "d2", ExpiresAt: end(400), At: at(1550)})
	f := cfg.Final["e"]
	f.Served["d2"], f.AdmittedTotal = t0.UnixMilli()+400, f.AdmittedTotal+1
	cfg.Final["e"] = f
	return h, cfg
}

func TestCleanArrivalsPass(t *testing.T) {
	h, cfg := withArrivals()
	r := Check(h, cfg)
	if v := r.Violations(); len(v) != 0 {
		t.Fatalf("violations in a clean history of arrivals:\n%s", strings.Join(v, "\n"))
	}
	if r.Arrived != 2 || r.ArrivedAtRisk != 1 || r.NoShowsFreed != 1 || r.NoShowsRestored != 0 || r.ArrivalReports["200"] != 1 {
		t.Errorf("arrived %d (at risk %d), no-shows freed %d restored %d, reports %v", r.Arrived, r.ArrivedAtRisk, r.NoShowsFreed, r.NoShowsRestored, r.ArrivalReports)
	}
	md := r.Markdown()
	for _, want := range []string{
		"| admissions whose client reached the shop (of them held when their arrival window closed) | 2 (1) |",
		"| no-shows' slots freed before the hold's end | 1 |",
		"| no-shows' slots kept to the end with no rebuild | 0 |",
		"| arrival report | 200 | 1 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
	// Without an arrival window the rows are left out.
	h, cfg = clean()
	if md := Check(h, cfg).Markdown(); strings.Contains(md, "arrival window") {
		t.Errorf("arrival rows for events without a window:\n%s", md)
	}
}

// Each broken promise of the arrival window is caught, and only that one.
func TestEachArrivalViolationIsFound(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(h *History)
		want   []string
	}{
		{"freed after its arrival was marked", func(h *History) {
			h.AddFreed(Freed{Event: "e", User: "b", ExpiresAt: h.Origin[0].Expires, At: at(5300)})
		}, []string{"freed as a no-show though in the shop: e/b (hold ending"}},
		{"freed after its arrival was marked, never at the origin", func(h *History) {
			h.AddArrival(ArrivalReport{Event: "e", User: "c", ExpiresAt: h.Freed[1].ExpiresAt, Sent: at(5000), Outcome: "200"})
		}, []string{"e/c (hold ending 1800000010300): freed at 08:00:05.400 after its arrival was answered marked at 08:00:05.000", "no-shows never freed: e"}},
		{"freed in the shop, its reports failing with no fault", func(h *History) {
			h.Arrivals[0].Outcome = "503"
			h.AddFreed(Freed{Event: "e", User: "b", ExpiresAt: h.Origin[0].Expires, At: at(5300)})
		}, []string{"no fault on Redis or a gateway meanwhile"}},
		{"freed in the shop, never reported", func(h *History) {
			h.Arrivals = nil
			h.AddFreed(Freed{Event: "e", User: "b", ExpiresAt: h.Origin[0].Expires, At: at(5300)})
		}, []string{"(reports: []): no fault on Redis or a gateway meanwhile"}},
		{"freed before the window closed", func(h *History) {
			h.Freed[1].At = at(4700)
		}, []string{"freed as a no-show before the arrival window closed: e/c"}},
		{"listed before its client's release was sent", func(h *History) {
			h.Releases[len(h.Releases)-1].At = at(3000)
		}, []string{"freed as a no-show before the arrival window closed: e/d2"}},
		{"no no-show freed", func(h *History) {
			h.Freed = h.Freed[:1]
		}, []string{"no-shows never freed: e: no no-show's slot freed before its hold's end (1 kept to the end)", "no-show's slot kept to its end: e/c (hold ending"}},
		{"no no-show freed, the one kept restored by a rebuild", func(h *History) {
			h.Freed = h.Freed[:1]
			h.AddFault(Fault{Kind: Rebuild, Target: "redis", Role: Redis, Start: at(9000), Healed: at(9500)})
		}, []string{"no-shows never freed: e: no no-show's slot freed before its hold's end (1 kept to the end)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, cfg := withArrivals()
			c.break_(h)
			v := slices.DeleteFunc(Check(h, cfg).Violations(), func(s string) bool { return strings.HasPrefix(s, "not recovered: rebuild") })
			if len(v) != len(c.want) {
				t.Fatalf("violations %q, want %d: %q", v, len(c.want), c.want)
			}
			all := strings.Join(v, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("violations %q lack %q", v, w)
				}
			}
		})
	}
}

// A free of someone in the shop is excused when a fault on Redis or a
// gateway overlapped the time from their visit to the window's close (with
// arrivalGrace after its heal), or when they came within arrivalMargin of
// the close; a fault elsewhere excuses nothing.
func TestArrivedFreedExcused(t *testing.T) {
	cases := []struct {
		name    string
		change  func(h *History)
		excused bool
	}{
		{"redis paused meanwhile", func(h *History) {
			h.AddFault(Fault{Kind: Pause, Target: "redis", Role: Redis, Start: at(4500), Healed: at(9000)})
		}, true},
		{"a gateway healed within the grace before the visit", func(h *History) {
			h.Faults[0].Healed = at(2200) // + 2 s grace: 4.2 s, after the visit at 4.1 s
		}, true},
		{"a consumer paused meanwhile", func(h *History) {
			h.AddFault(Fault{Kind: Pause, Target: "c1", Role: Consumer, Start: at(4500), Healed: at(9000)})
		}, false},
		{"came at the window's end", func(h *History) {
			h.Origin[0].At = at(4300) // the window closes at 5.2 s
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, cfg := withArrivals()
			h.Arrivals[0].Outcome = NoAnswer
			h.AddFreed(Freed{Event: "e", User: "b", ExpiresAt: h.Origin[0].Expires, At: at(5300)})
			c.change(h)
			r := Check(h, cfg)
			if got := len(r.ArrivedFreedExcused) == 1 && len(r.ArrivedFreed) == 0; got != c.excused {
				t.Fatalf("excused %q, violations %q; want excused %v", r.ArrivedFreedExcused, r.ArrivedFreed, c.excused)
			}
			if c.excused && !strings.Contains(r.Markdown(), "Clients in the shop freed as no-shows, excused:") {
				t.Errorf("the report does not list the excused free")
			}
		})
	}
}

// A no-show's slot kept to its end is excused only when a rebuild
// overlapped its hold (it frees none of the holds it restores), and judged
// only once the history ran past the hold's end and the released list's
// keep.
func TestANoShowKeptToItsEnd(t *testing.T) {
	h, cfg := withArrivals()
	h.Freed = slices.DeleteFunc(h.Freed, func(f Freed) bool { return f.User == "c" })
	h.AddJoin(Join{Event: "e", User: "n", At: at(33), Outcome: "202", Stamp: t0.UnixMilli() + 33})
	h.AddAdmission(admitted("e", "n", 500, 503))
	h.AddFreed(Freed{Event: "e", User: "n", ExpiresAt: t0.UnixMilli() + 500 + holdMs, At: at(5600)})
	f := cfg.Final["e"]
	f.Served["n"], f.AdmittedTotal = t0.UnixMilli()+500, f.AdmittedTotal+1
	cfg.Final["e"] = f
	if r := Check(h, cfg); len(r.NoShowsKept) != 1 || !strings.HasPrefix(r.NoShowsKept[0], "e/c (hold ending") || r.NoShowsFreed != 1 {
		t.Errorf("c kept with no rebuild: kept %q, freed %d", r.NoShowsKept, r.NoShowsFreed)
	}
	// A rebuild within c's hold (0.3 s to 10.3 s) excuses it.
	h.AddFault(Fault{Kind: Rebuild, Target: "redis", Role: Redis, Start: at(10000), Healed: at(11000)})
	if r := Check(h, cfg); len(r.NoShowsKept) != 0 || r.NoShowsRestored != 1 {
		t.Errorf("c kept, a rebuild within its hold: kept %q, restored %d", r.NoShowsKept, r.NoShowsRestored)
	}
	// One after it does not.
	h.Faults[len(h.Faults)-1].Start, h.Faults[len(h.Faults)-1].Healed = at(10400), at(11000)
	if r := Check(h, cfg); len(r.NoShowsKept) != 1 {
		t.Errorf("c kept, a rebuild after its hold: kept %q", r.NoShowsKept)
	}
	// A history ending before the hold's end and the keep judges nothing.
	h.Faults = h.Faults[:len(h.Faults)-1]
	h.Lines[len(h.Lines)-1].Got = at(12000)
	if r := Check(h, cfg); len(r.NoShowsKept) != 0 {
		t.Errorf("c's hold ended 10.3 s, the history at 12 s: kept %q", r.NoShowsKept)
	}
}

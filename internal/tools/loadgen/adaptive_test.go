package loadgen

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
)

// testRun is a run of three seconds recorded by hand: three visitors join
// in the first second, two are admitted, one orders and one gives up; the
// event admitted 2 by the first sample and 6 by the third.
func testRun(m admissionMode) *adaptiveRun {
	s := time.Second
	r := &adaptiveRun{mode: m, elapsed: 2500 * time.Millisecond, failures: newTally()}
	r.joined = []time.Duration{s / 10, s / 5, s / 2}
	r.admitted = []time.Duration{s / 2, 3 * s / 2}
	r.ordered = []time.Duration{2 * s}
	r.gaveUp = []time.Duration{5 * s / 2}
	r.pages = []pageRecord{
		{end: s / 2, took: 10 * time.Millisecond},
		{end: 900 * time.Millisecond, took: 300 * time.Millisecond, failed: true},
		{end: 1900 * time.Millisecond, took: 40 * time.Millisecond},
	}
	r.ticks = map[int]adaptiveTick{
		1: {waiting: 1, total: 2, rate: 300, guardP95: 12, guardErrors: 0.5},
		// second 2's sample is missing: the first one stands
		3: {waiting: 0, total: 6, rate: 600, guardP95: math.NaN(), guardErrors: math.NaN()},
	}
	return r
}

func TestAdaptiveRows(t *testing.T) {
	rows := testRun(admissionMode{"adaptive", 3000, true}).rows()
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	type want struct {
		joined, inShop, ordered, gaveUp, waiting, pages, errors int
		p95, admittedPerMin                                     float64
		rate                                                    int
		sampled                                                 bool
	}
	wants := []want{
		{3, 1, 0, 0, 1, 2, 1, 300, 120, 300, true}, // 2 admitted in 1 s
		{3, 1, 1, 0, 1, 1, 0, 40, 60, 300, false},  // the first sample stands
		{3, 0, 1, 1, 0, 0, 0, math.NaN(), 120, 600, true},
	}
	for i, w := range wants {
		s := rows[i]
		got := want{s.joined, s.inShop, s.ordered, s.gaveUp, s.waiting, s.pages, s.errors, s.p95, s.admittedPerMin, s.rate, s.sampled}
		if got.p95 != w.p95 && !(math.IsNaN(got.p95) && math.IsNaN(w.p95)) {
			t.Errorf("second %d: p95 %g, want %g", i+1, got.p95, w.p95)
		}
		got.p95, w.p95 = 0, 0
		if got != w {
			t.Errorf("second %d: %+v, want %+v", i+1, got, w)
		}
	}
	if e := rows[0].errorPct; e != 50 {
		t.Errorf("error share %g%%, want 50%%", e)
	}
	if e := rows[2].errorPct; !math.IsNaN(e) {
		t.Errorf("error share of a second without pages %g, want NaN", e)
	}
}

func TestAdaptiveSummary(t *testing.T) {
	cfg := adaptiveConfig{users: 2, target: 250 * time.Millisecond}
	r := testRun(admissionMode{"fixed", 3000, false})
	r.seconds = r.rows()
	s := r.summary(cfg)
	if s.joined != 3 || s.admitted != 2 || s.ordered != 1 || s.gaveUp != 1 || s.pages != 3 || s.errors != 1 {
		t.Fatalf("counts %+v", s)
	}
	if s.allAdmittedAt != 1500*time.Millisecond || s.p95 != 300*time.Millisecond || s.peakP95 != 300 {
		t.Fatalf("all admitted at %s, p95 %s, worst second %g", s.allAdmittedAt, s.p95, s.peakP95)
	}
	if math.Abs(s.pagesWithin-2.0/3) > 1e-9 || s.withinTarget != 0.5 || s.admittingPerMin != 120 {
		t.Fatalf("served within %g, seconds within %g, admitting %g/min", s.pagesWithin, s.withinTarget, s.admittingPerMin)
	}
}

// TestAdaptiveChanges: the changes of overlapping samples (newest first)
// are kept once each, oldest first, even several in one millisecond.
func TestAdaptiveChanges(t *testing.T) {
	r := testRun(admissionMode{"adaptive", 3000, true})
	start := queue.RateChange{At: 5, From: 0, To: 300, Reason: queue.ReasonStart}
	lost := queue.RateChange{At: 5, From: 300, To: 0, Reason: queue.ReasonNoSignal}
	back := queue.RateChange{At: 9, From: 0, To: 300, Reason: queue.ReasonSignalBack}
	up := queue.RateChange{At: 20, From: 300, To: 600, Reason: queue.ReasonHealthy}
	r.gather(queue.EventStatus{Control: &queue.ControlStatus{Changes: []queue.RateChange{back, lost, start}}})
	r.gather(queue.EventStatus{Control: &queue.ControlStatus{Changes: []queue.RateChange{up, back, lost}}})
	r.gather(queue.EventStatus{}) // a fixed rate has no controller
	want := []queue.RateChange{start, lost, back, up}
	if len(r.changes) != len(want) {
		t.Fatalf("changes %+v", r.changes)
	}
	for i := range want {
		if r.changes[i] != want[i] {
			t.Fatalf("change %d: %+v, want %+v", i, r.changes[i], want[i])
		}
	}
}

func TestEventBody(t *testing.T) {
	cfg := adaptiveConfig{target: 250 * time.Millisecond, step: 20 * time.Second}
	var adaptive, fixed map[string]any
	if err := json.Unmarshal([]byte(eventBody(cfg, admissionMode{"adaptive", 3000, true}, "http://127.0.0.1:1/")), &adaptive); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(eventBody(cfg, admissionMode{"fixed", 3000, false}, "http://127.0.0.1:1/")), &fixed); err != nil {
		t.Fatal(err)
	}
	a, ok := adaptive["adaptive"].(map[string]any)
	if !ok || a["targetLatencyMs"] != 250.0 || a["stepMs"] != 20000.0 || a["signalTimeoutSeconds"] != 20.0 {
		t.Fatalf("adaptive body %v", adaptive)
	}
	if _, ok := fixed["adaptive"]; ok || fixed["admitPerMinute"] != 3000.0 || fixed["targetUrl"] != "http://127.0.0.1:1/" || fixed["capacity"] != float64(adaptiveCapacity) {
		t.Fatalf("fixed body %v", fixed)
	}
}

// TestAdaptiveOutputs writes the table, the CSV and the chart of two runs.
func TestAdaptiveOutputs(t *testing.T) {
	cfg := adaptiveConfig{users: 2, ceiling: 3000, target: 250 * time.Millisecond, step: time.Second,
		workers: 2, workTime: 25 * time.Millisecond, queueTimeout: 2 * time.Second, think: time.Second, arrive: time.Second}
	runs := []*adaptiveRun{testRun(admissionMode{"adaptive", 3000, true}), testRun(admissionMode{"fixed", 3000, false})}
	for _, r := range runs {
		r.seconds = r.rows()
	}
	var table bytes.Buffer
	printAdaptive(&table, cfg, runs)
	for _, want := range []string{"run    adaptive", "run    fixed", "summary | visitors' page p95", "summary | time to admit everyone"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("no %q in the table:\n%s", want, table.String())
		}
	}
	dir := t.TempDir()
	csvPath, svgPath := filepath.Join(dir, "a.csv"), filepath.Join(dir, "a.svg")
	if err := writeFile(io.Discard, csvPath, func(w io.Writer) error { return writeAdaptiveCSV(w, runs) }); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 7 || len(recs[0]) != len(adaptiveCSVHeader) || recs[3][12] != "" || recs[1][0] != "adaptive" {
		t.Fatalf("csv %v: %q", err, recs)
	}
	if err := writeFile(io.Discard, svgPath, adaptiveChart(cfg, runs, time.Now()).Write); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"adaptive: ceiling 3000/min, target p95 250 ms", "fixed: 3000/min", "shop&#39;s limit (unknown to waitq)", "target 250 ms"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("no %q in the chart", want)
		}
	}
}

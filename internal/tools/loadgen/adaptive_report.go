package loadgen

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/tools/loadgen/latency"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
	"github.com/waitq/waitq/internal/tools/svgchart"
)

// admittedSpan is the span the admitted-a-minute figure is averaged over.
const admittedSpan = 5

// secondRow is one second of a run, as the CSV and the chart have it.
type secondRow struct {
	second                  int
	joined, waiting, inShop int
	ordered, gaveUp         int
	admittedTotal           int64
	admittedPerMin          float64 // over the last admittedSpan seconds
	rate                    int     // the effective rate, users a minute
	pages, errors           int     // ended in this second
	p95                     float64 // ms; NaN without pages
	guardP95, guardErrors   float64 // the guard's latest report; NaN: none
	shopBusy, shopQueued    int
	sampled, signalLost     bool // a sample of its own; the controller's signal lost
}

// errorPct returns the share of this second's pages that failed, in %;
// NaN without pages.
func (s secondRow) errorPct() float64 {
	if s.pages == 0 {
		return math.NaN()
	}
	return 100 * float64(s.errors) / float64(s.pages)
}

// rows turns the run's records into one row a second, from second 1 to
// the end of the run.
func (r *adaptiveRun) rows() []secondRow {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := max(int(math.Ceil(r.elapsed.Seconds())), 1)
	rows := make([]secondRow, n)
	upTo := func(list []time.Duration, t time.Duration) int { // list is not sorted
		k := 0
		for _, d := range list {
			if d <= t {
				k++
			}
		}
		return k
	}
	perSecond := make([]latency.Sorted, n)
	for _, p := range r.pages {
		i := min(max(int(math.Ceil(p.end.Seconds()))-1, 0), n-1)
		perSecond[i] = append(perSecond[i], p.took)
		if p.failed {
			rows[i].errors++
		}
	}
	ticks := map[int]adaptiveTick{}
	for _, t := range r.ticks {
		ticks[int(math.Round(t.at.Seconds()))] = t
	}
	var last adaptiveTick
	totals := make([]int64, n)
	for i := range rows {
		s := &rows[i]
		s.second = i + 1
		end := time.Duration(s.second) * time.Second
		s.joined, s.ordered, s.gaveUp = upTo(r.joined, end), upTo(r.ordered, end), upTo(r.gaveUp, end)
		s.inShop = upTo(r.admitted, end) - s.ordered - s.gaveUp
		lat := perSecond[i]
		slices.Sort(lat)
		s.pages, s.p95 = len(lat), math.NaN()
		if len(lat) > 0 {
			s.p95 = float64(lat.Percentile(0.95)) / float64(time.Millisecond)
		}
		t, ok := ticks[s.second]
		s.sampled = ok
		if ok {
			last = t
		} else {
			t = last // a sample missed: the last one stands
		}
		s.waiting, s.admittedTotal, s.rate = int(t.waiting), t.total, t.rate
		s.guardP95, s.guardErrors = t.guardP95, t.guardErrors
		if t.at == 0 {
			s.guardP95, s.guardErrors = math.NaN(), math.NaN()
		}
		s.shopBusy, s.shopQueued, s.signalLost = t.shopBusy, t.shopQueued, t.signalLost
		totals[i] = t.total
		from := max(i-admittedSpan, -1)
		before := int64(0)
		if from >= 0 {
			before = totals[from]
		}
		s.admittedPerMin = float64(t.total-before) / float64(i-from) * 60
	}
	return rows
}

// adaptiveSummary is a run's figures for the table.
type adaptiveSummary struct {
	joined, admitted, ordered, gaveUp int
	pages, errors                     int
	p50, p95, p99                     time.Duration
	allAdmittedAt                     time.Duration // 0: not everyone was admitted
	withinTarget                      float64       // share of the seconds with pages
	pagesWithin                       float64       // share of the pages served (200) within the target
	peakP95                           float64       // ms, the worst second
	admittingPerMin                   float64       // admitted a minute while anyone waited
}

// summary returns the run's figures.
func (r *adaptiveRun) summary(cfg adaptiveConfig, rows []secondRow) adaptiveSummary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := adaptiveSummary{joined: len(r.joined), admitted: len(r.admitted), ordered: len(r.ordered), gaveUp: len(r.gaveUp), pages: len(r.pages)}
	lat := make(latency.Sorted, 0, len(r.pages))
	served := 0
	for _, p := range r.pages {
		lat = append(lat, p.took)
		switch {
		case p.failed:
			s.errors++
		case p.took <= cfg.target:
			served++
		}
	}
	slices.Sort(lat)
	s.p50, s.p95, s.p99 = lat.Percentile(0.5), lat.Percentile(0.95), lat.Percentile(0.99)
	if len(lat) > 0 {
		s.pagesWithin = float64(served) / float64(len(lat))
	}
	if s.admitted == cfg.users {
		s.allAdmittedAt = slices.Max(r.admitted)
	}
	var seconds, within int
	for _, row := range rows {
		if row.pages == 0 {
			continue
		}
		seconds++
		if row.p95 <= float64(cfg.target)/float64(time.Millisecond) {
			within++
		}
		s.peakP95 = max(s.peakP95, row.p95)
	}
	if seconds > 0 {
		s.withinTarget = float64(within) / float64(seconds)
	}
	if s.admitted > 0 {
		first, last := slices.Min(r.admitted), slices.Max(r.admitted)
		if span := last - first; span > 0 {
			s.admittingPerMin = float64(s.admitted) / span.Minutes()
		}
	}
	return s
}

// errorShare returns the failed pages' share.
func (s *adaptiveSummary) errorShare() float64 {
	if s.pages == 0 {
		return 0
	}
	return float64(s.errors) / float64(s.pages)
}

// printAdaptive prints the adaptive table: a block per run, the adaptive
// run's rate changes, and the summary rows (the adaptive run against the
// fixed run at the same ceiling).
func printAdaptive(w io.Writer, cfg adaptiveConfig, runs []*adaptiveRun, rows [][]secondRow) {
	sums := make([]adaptiveSummary, len(runs))
	fmt.Fprintln(w)
	for i, r := range runs {
		s := r.summary(cfg, rows[i])
		sums[i] = s
		all := fmt.Sprintf("all by %.1fs", s.allAdmittedAt.Seconds())
		if s.allAdmittedAt == 0 {
			all = fmt.Sprintf("%d not admitted within the run", cfg.users-s.admitted)
		}
		fmt.Fprintf(w, "run    %-8s %-42s %5.1fs  joined %d  admitted %d (%s, %.0f/min on average)  ordered %d  gave up %d\n",
			r.mode.name, r.mode.label(cfg), r.elapsed.Seconds(), s.joined, s.admitted, all, s.admittingPerMin, s.ordered, s.gaveUp)
		fmt.Fprintf(w, "pages  %-8s n %d  failed %d (%.1f%%)  p50 %s  p95 %s  p99 %s  served within %s %.1f%%  worst second's p95 %.0fms  seconds with p95 within %s %.0f%%\n",
			r.mode.name, s.pages, s.errors, 100*s.errorShare(), report.Millis(s.p50), report.Millis(s.p95), report.Millis(s.p99),
			report.Millis(cfg.target), 100*s.pagesWithin, s.peakP95, report.Millis(cfg.target), 100*s.withinTarget)
		if c := r.final.Control; c != nil {
			fmt.Fprintf(w, "control %-8s increases %d  decreases %d  stops %d  phase %s  rate at the end %d/min  guard reports seen %d\n",
				r.mode.name, c.Increases, c.Decreases, c.Stops, c.Phase, c.Rate, r.reports)
		}
		r.failures.print(w, "failures "+r.mode.name+" ")
	}
	for _, r := range runs {
		for _, ch := range r.changes {
			fmt.Fprintf(w, "change %-8s %+6.1fs  %5d → %5d  %-11s %s\n", r.mode.name, time.UnixMilli(ch.At).Sub(r.start).Seconds(), ch.From, ch.To, ch.Reason, ch.Detail)
		}
	}
	if len(runs) < 2 {
		return
	}
	a, f := sums[0], sums[1]
	base := runs[1].mode.label(cfg) + ": "
	what := fmt.Sprintf("%d visitors at a shop of ≈%.0f/min, adaptive (ceiling %d/min) against fixed", cfg.users, cfg.shopPerMinute(), cfg.ceiling)
	report.Summary(w, "visitors' page p95, "+what, report.Millis(a.p95), base+report.Millis(f.p95),
		float64(a.p95), float64(f.p95), "≤ "+report.Millis(cfg.target)+" (the target): "+met(a.p95 <= cfg.target))
	report.Summary(w, "pages failed (503, timeouts), "+what, fmt.Sprintf("%.1f%%", 100*a.errorShare()), base+fmt.Sprintf("%.1f%%", 100*f.errorShare()),
		a.errorShare(), f.errorShare(), "< 5% (maxErrorRate): "+met(a.errorShare() < queue.DefaultMaxErrorRate))
	report.Summary(w, "orders placed, "+what, strconv.Itoa(a.ordered), base+strconv.Itoa(f.ordered), float64(a.ordered), float64(f.ordered), "")
	report.Summary(w, "pages served within the target, "+what, fmt.Sprintf("%.1f%%", 100*a.pagesWithin),
		base+fmt.Sprintf("%.1f%%", 100*f.pagesWithin), a.pagesWithin, f.pagesWithin, "")
	report.Summary(w, "seconds with the visitors' p95 within the target, "+what, fmt.Sprintf("%.0f%%", 100*a.withinTarget),
		base+fmt.Sprintf("%.0f%%", 100*f.withinTarget), a.withinTarget, f.withinTarget, "")
	report.Summary(w, "time to admit everyone, "+what, admittedBy(a), base+admittedBy(f), a.allAdmittedAt.Seconds(), f.allAdmittedAt.Seconds(), "")
}

// admittedBy formats when everyone was admitted.
func admittedBy(s adaptiveSummary) string {
	if s.allAdmittedAt == 0 {
		return "not within the run"
	}
	return fmt.Sprintf("%.0fs", s.allAdmittedAt.Seconds())
}

// adaptiveCSVHeader names the CSV's columns.
var adaptiveCSVHeader = []string{"run", "second", "joined", "waiting", "in_shop", "ordered", "gave_up",
	"admitted_total", "admitted_per_min_5s", "rate_per_min", "pages", "page_errors", "page_p95_ms",
	"gate_p95_ms", "gate_error_rate", "shop_in_service", "shop_queued", "signal_lost"}

// writeAdaptiveCSV writes every run's rows as CSV to w.
func writeAdaptiveCSV(f io.Writer, runs []*adaptiveRun, rows [][]secondRow) error {
	w := csv.NewWriter(f)
	_ = w.Write(adaptiveCSVHeader)
	num := func(v float64, prec int) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	for i, r := range runs {
		for _, s := range rows[i] {
			_ = w.Write([]string{r.mode.name, strconv.Itoa(s.second), strconv.Itoa(s.joined), strconv.Itoa(s.waiting),
				strconv.Itoa(s.inShop), strconv.Itoa(s.ordered), strconv.Itoa(s.gaveUp), strconv.FormatInt(s.admittedTotal, 10),
				num(s.admittedPerMin, 0), strconv.Itoa(s.rate), strconv.Itoa(s.pages), strconv.Itoa(s.errors), num(s.p95, 1),
				num(s.guardP95, 1), num(s.guardErrors, 4), strconv.Itoa(s.shopBusy), strconv.Itoa(s.shopQueued), strconv.FormatBool(s.signalLost)})
		}
	}
	w.Flush()
	return w.Error()
}

// writeFile writes path with write, and prints that it did.
func writeFile(stdout io.Writer, path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", path)
	return nil
}

// Colours of the chart's lines.
const (
	colJoined   = "#8c8c8c"
	colWaiting  = "#1f77b4"
	colInShop   = "#ff7f0e"
	colOrdered  = "#2ca02c"
	colRate     = "#9467bd"
	colAdmitted = "#17becf"
	colLimit    = "#555555"
	colP95      = "#d62728"
	colGuard    = "#8c564b"
	colTarget   = "#111111"
)

// adaptiveChart draws a column per run, the same four panels in each, on
// the same scales: the visitors (joined, waiting, in the shop, ordered),
// the admission rate (the effective rate, what was admitted, the shop's
// limit), the shop's p95 as the visitors saw it (with the guard's reported
// p95 and the target) and the share of failed pages.
func adaptiveChart(cfg adaptiveConfig, runs []*adaptiveRun, rows [][]secondRow, now time.Time) *svgchart.Chart {
	var maxT, maxUsers float64
	for i := range runs {
		for _, s := range rows[i] {
			maxT = max(maxT, float64(s.second))
			maxUsers = max(maxUsers, float64(s.joined), float64(s.waiting))
		}
	}
	// The rate's scale shows the rates set, not the burst of a token bucket
	// that starts full (ceil(rate / 12) at once): a line above it is cut,
	// and the panel's title says how far it went.
	xAxis := svgchart.Linear("seconds since the first join", maxT)
	usersAxis := svgchart.Linear("visitors", maxUsers)
	rateAxis := svgchart.Linear("visitors a minute", max(float64(cfg.ceiling), cfg.shopPerMinute(), float64(cfg.cautious))*1.25)
	msAxis := svgchart.Decades("ms (log)", 1, 4)
	errAxis := svgchart.Linear("% of pages", 100)
	targetMs := float64(cfg.target) / float64(time.Millisecond)

	c := &svgchart.Chart{
		Title: fmt.Sprintf("Adaptive admission against a fixed rate: %d visitors at a demo shop that bears about %.0f a minute", cfg.users, cfg.shopPerMinute()),
		Subtitles: []string{
			fmt.Sprintf("The shop: %d workers × %s a page, 503 after %s in its queue; waitq is not told its limit. A visit: %d pages through waitq-guard, %s think time, one retry of a failed page.",
				cfg.workers, cfg.workTime, cfg.queueTimeout, visitPages, cfg.think),
			fmt.Sprintf("%d visitors join over %s; the guard reports the p95 and errors of a %s window every %s; admission ticks every %s. %s, %d cores, %s.",
				cfg.users, cfg.arrive, adaptiveWindow, adaptiveInterval, adaptiveMonitor, now.UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.Version()),
			"loadgen adaptive " + cfg.line(),
		},
	}
	var users, rates, lats, errs []svgchart.Panel
	for i, r := range runs {
		c.Columns = append(c.Columns, r.mode.label(cfg))
		peak := 0.0
		for _, s := range rows[i] {
			peak = max(peak, s.admittedPerMin)
		}
		pts := func(y func(secondRow) float64) []svgchart.Point {
			p := make([]svgchart.Point, len(rows[i]))
			for k, s := range rows[i] {
				p[k] = svgchart.Point{X: float64(s.second), Y: y(s)}
			}
			return p
		}
				level := func(y float64) []svgchart.Point {
			return []svgchart.Point{{X: 0, Y: y}, {X: xAxis.Max(), Y: y}}
		}
		rateName := "admission rate (controller)"
		if !r.mode.adaptive {
			rateName = "admission rate (fixed)"
		}
		users = append(users, svgchart.Panel{
			Title: "Visitors", X: xAxis, Y: usersAxis,
			Series: []svgchart.Series{
				{Name: "joined", Color: colJoined, Points: pts(func(s secondRow) float64 { return float64(s.joined) })},
				{Name: "waiting in line", Color: colWaiting, Points: pts(func(s secondRow) float64 { return float64(s.waiting) })},
				{Name: "in the shop", Color: colInShop, Points: pts(func(s secondRow) float64 { return float64(s.inShop) })},
				{Name: "ordered", Color: colOrdered, Points: pts(func(s secondRow) float64 { return float64(s.ordered) })},
			},
		})
		title := "Admission"
		if peak > rateAxis.Max() {
			title = fmt.Sprintf("Admission (the admitted line leaves the scale, up to %.0f/min)", peak)
		}
		rates = append(rates, svgchart.Panel{
			Title: title, X: xAxis, Y: rateAxis,
			Series: []svgchart.Series{
				{Name: "shop's limit (unknown to waitq)", Color: colLimit, Dashed: true, Width: 1.2, Points: level(cfg.shopPerMinute())},
				{Name: fmt.Sprintf("admitted (%d s average)", admittedSpan), Color: colAdmitted, Points: pts(func(s secondRow) float64 { return s.admittedPerMin })},
				{Name: rateName, Color: colRate, Width: 2.2, Points: pts(func(s secondRow) float64 { return float64(s.rate) })},
			},
		})
		lats = append(lats, svgchart.Panel{
			Title: "Shop latency, p95 of each second's pages", X: xAxis, Y: msAxis,
			Series: []svgchart.Series{
				{Name: fmt.Sprintf("target %d ms", cfg.target.Milliseconds()), Color: colTarget, Dashed: true, Width: 1.2, Points: level(targetMs)},
				{Name: fmt.Sprintf("guard's report (%s window)", adaptiveWindow), Color: colGuard, Width: 1.2, Points: pts(func(s secondRow) float64 { return s.guardP95 })},
				{Name: "as visitors saw it", Color: colP95, Points: pts(func(s secondRow) float64 { return s.p95 })},
			},
		})
		errs = append(errs, svgchart.Panel{
			Title: "Failed pages (503, timeouts), each second", X: xAxis, Y: errAxis,
			Series: []svgchart.Series{
				{Name: "maxErrorRate 5%", Color: colTarget, Dashed: true, Width: 1.2, Points: level(100 * queue.DefaultMaxErrorRate)},
				{Name: "failed", Color: colP95, Points: pts(secondRow.errorPct)},
			},
		})
	}
	for _, row := range [][]svgchart.Panel{users, rates, lats, errs} {
		c.Panels = append(c.Panels, row...)
	}
	return c
}

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

// secondRow is one second of a run, as the CSV and the chart have it: what
// the visitors did by its end, the pages that ended in it, and the latest
// sample of the event and the shop.
type secondRow struct {
	second          int
	joined, inShop  int
	ordered, gaveUp int
	admittedPerMin  float64 // over the last admittedSpan seconds
	pages, errors   int
	p95, errorPct   float64 // ms, and % of the pages failed; NaN without pages
	sampled         bool    // a sample of its own, not the last one standing
	adaptiveTick
}

// rows turns the run's records into one row a second, from second 1 to
// the end of the run; it reads them once the run is over.
func (r *adaptiveRun) rows() []secondRow {
	n := max(int(math.Ceil(r.elapsed.Seconds())), 1)
	rows := make([]secondRow, n)
	perSecond := make([]latency.Sorted, n)
	for _, p := range r.pages {
		i := min(max(int(math.Ceil(p.end.Seconds()))-1, 0), n-1)
		perSecond[i] = append(perSecond[i], p.took)
		if p.failed {
			rows[i].errors++
		}
	}
	last := adaptiveTick{guardP95: math.NaN(), guardErrors: math.NaN()} // before the first sample
	// upTo counts the moments of list (sorted below) at or before t.
	upTo := func(list []time.Duration, t time.Duration) int {
		n, _ := slices.BinarySearch(list, t+1)
		return n
	}
	for _, list := range [][]time.Duration{r.joined, r.admitted, r.ordered, r.gaveUp} {
		slices.Sort(list)
	}
	for i := range rows {
		s := &rows[i]
		s.second = i + 1
		end := time.Duration(s.second) * time.Second
		s.joined, s.ordered, s.gaveUp = upTo(r.joined, end), upTo(r.ordered, end), upTo(r.gaveUp, end)
		s.inShop = upTo(r.admitted, end) - s.ordered - s.gaveUp
		lat := perSecond[i]
		slices.Sort(lat)
		s.pages, s.p95, s.errorPct = len(lat), math.NaN(), math.NaN()
		if len(lat) > 0 {
			s.p95 = float64(lat.Percentile(0.95)) / float64(time.Millisecond)
			s.errorPct = 100 * float64(s.errors) / float64(s.pages)
		}
		if t, ok := r.ticks[s.second]; ok {
			last, s.sampled = t, true
		}
		s.adaptiveTick = last // a sample missed: the last one stands
		from, before := max(i-admittedSpan, -1), int64(0)
		if from >= 0 {
			before = rows[from].total
		}
		s.admittedPerMin = float64(s.total-before) / float64(i-from) * 60
	}
	return rows
}

// adaptiveSummary is a run's figures for the table.
type adaptiveSummary struct {
	joined, admitted, ordered, gaveUp int
	pages, errors                     int
	errorShare                        float64 // of the pages
	p50, p95, p99                     time.Duration
	allAdmittedAt                     time.Duration // 0: not everyone was admitted
	withinTarget                      float64       // share of the seconds with pages
	pagesWithin                       float64       // share of the pages served (200) within the target
	peakP95                           float64       // ms, the worst second
	admittingPerMin                   float64       // admitted a minute while anyone waited
}

// summary returns the figures of the run, once it is over.
func (r *adaptiveRun) summary(cfg adaptiveConfig) adaptiveSummary {
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
	if s.pages > 0 {
		s.pagesWithin, s.errorShare = float64(served)/float64(s.pages), float64(s.errors)/float64(s.pages)
	}
	if s.admitted == cfg.users {
		s.allAdmittedAt = slices.Max(r.admitted)
	}
	var seconds, within int
	for _, row := range r.seconds {
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
		if span := slices.Max(r.admitted) - slices.Min(r.admitted); span > 0 {
			s.admittingPerMin = float64(s.admitted) / span.Minutes()
		}
	}
	return s
}

// printAdaptive prints the adaptive table: a block per run, the runs' rate
// changes, and the summary rows (the adaptive run against the fixed run at
// the same ceiling).
func printAdaptive(w io.Writer, cfg adaptiveConfig, runs []*adaptiveRun) {
	fmt.Fprintln(w)
	for _, r := range runs {
		s := r.summary(cfg)
		all := fmt.Sprintf("all by %.1fs", s.allAdmittedAt.Seconds())
		if s.allAdmittedAt == 0 {
			all = fmt.Sprintf("%d not admitted within the run", cfg.users-s.admitted)
		}
		fmt.Fprintf(w, "run    %-8s %-42s %5.1fs  joined %d  admitted %d (%s, %.0f/min on average)  ordered %d  gave up %d\n",
			r.mode.name, r.mode.label(cfg), r.elapsed.Seconds(), s.joined, s.admitted, all, s.admittingPerMin, s.ordered, s.gaveUp)
		fmt.Fprintf(w, "pages  %-8s n %d  failed %d (%.1f%%)  p50 %s  p95 %s  p99 %s  served within %s %.1f%%  worst second's p95 %.0fms  seconds with p95 within %s %.0f%%\n",
			r.mode.name, s.pages, s.errors, 100*s.errorShare, report.Millis(s.p50), report.Millis(s.p95), report.Millis(s.p99),
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
	a, f := runs[0].summary(cfg), runs[1].summary(cfg)
	what := fmt.Sprintf(", %d visitors at a shop of ≈%.0f/min, adaptive (ceiling %d/min) against fixed", cfg.users, cfg.shopPerMinute(), cfg.ceiling)
	line := func(figure string, av, fv float64, show func(float64) string, goal string) {
		report.Summary(w, figure+what, show(av), runs[1].mode.label(cfg)+": "+show(fv), av, fv, goal)
	}
	pct := func(decimals int) func(float64) string {
		return func(v float64) string { return fmt.Sprintf("%.*f%%", decimals, 100*v) }
	}
	line("visitors' page p95", float64(a.p95), float64(f.p95), func(v float64) string { return report.Millis(time.Duration(v)) },
		"≤ "+report.Millis(cfg.target)+" (the target): "+met(a.p95 <= cfg.target))
	line("pages failed (503, timeouts)", a.errorShare, f.errorShare, pct(1), "< 5% (maxErrorRate): "+met(a.errorShare < queue.DefaultMaxErrorRate))
	line("orders placed", float64(a.ordered), float64(f.ordered), func(v float64) string { return fmt.Sprint(v) }, "")
	line("pages served within the target", a.pagesWithin, f.pagesWithin, pct(1), "")
	line("seconds with the visitors' p95 within the target", a.withinTarget, f.withinTarget, pct(0), "")
	line("time to admit everyone", a.allAdmittedAt.Seconds(), f.allAdmittedAt.Seconds(), func(v float64) string {
		if v == 0 {
			return "not within the run"
		}
		return fmt.Sprintf("%.0fs", v)
	}, "")
}

// adaptiveCSVHeader names the CSV's columns.
var adaptiveCSVHeader = []string{"run", "second", "joined", "waiting", "in_shop", "ordered", "gave_up",
	"admitted_total", "admitted_per_min_5s", "rate_per_min", "pages", "page_errors", "page_p95_ms",
	"gate_p95_ms", "gate_error_rate", "shop_in_service", "shop_queued", "signal_lost"}

// writeAdaptiveCSV writes every run's rows as CSV to w.
func writeAdaptiveCSV(f io.Writer, runs []*adaptiveRun) error {
	w := csv.NewWriter(f)
	_ = w.Write(adaptiveCSVHeader)
	num := func(v float64, prec int) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	for _, r := range runs {
		for _, s := range r.seconds {
			_ = w.Write([]string{r.mode.name, strconv.Itoa(s.second), strconv.Itoa(s.joined), strconv.Itoa(s.waiting),
				strconv.Itoa(s.inShop), strconv.Itoa(s.ordered), strconv.Itoa(s.gaveUp), strconv.FormatInt(s.total, 10),
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

// adaptiveChart draws a column per run, the same four panels in each, on
// the same scales: the visitors (joined, waiting, in the shop, ordered),
// the admission rate (the effective rate, what was admitted, the shop's
// limit), the shop's p95 as the visitors saw it (with the guard's reported
// p95 and the target) and the share of failed pages.
func adaptiveChart(cfg adaptiveConfig, runs []*adaptiveRun, now time.Time) *svgchart.Chart {
	var maxT, maxUsers float64
	for _, r := range runs {
		maxT = max(maxT, float64(len(r.seconds)))
		for _, s := range r.seconds {
			maxUsers = max(maxUsers, float64(s.joined), float64(s.waiting))
		}
	}
	// The rate's scale shows the rates set, not the burst of a token bucket
	// that starts full (ceil(rate / 12) at once): a line above it is cut,
	// and the panel's title says how far it went.
	xAxis := svgchart.Linear("seconds since the first join", maxT)
	usersAxis := svgchart.Linear("visitors", maxUsers)
	rateAxis := svgchart.Linear("visitors a minute", max(float64(cfg.ceiling), cfg.shopPerMinute(), float64(cfg.cautious))*1.25)
	c := &svgchart.Chart{
		Title: fmt.Sprintf("Adaptive admission against a fixed rate: %d visitors at a demo shop that bears about %.0f a minute", cfg.users, cfg.shopPerMinute()),
		Subtitles: []string{
			fmt.Sprintf("The shop: %d workers × %s a page, 503 after %s in its queue; waitq is not told its limit. A visit: %d pages through waitq-guard, %s think time, one retry of a failed page.",
				cfg.workers, cfg.workTime, cfg.queueTimeout, visitPages, cfg.think),
			fmt.Sprintf("%d visitors join over %s; the guard reports the p95 and errors of a %s window every %s; admission ticks every %s. %s, %d cores, %s.",
				cfg.users, cfg.arrive, adaptiveWindow, adaptiveInterval, adaptiveMonitor, now.UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.Version()),
			"loadgen adaptive " + cfg.line(),
		},
		Panels: make([]svgchart.Panel, 4*len(runs)),
	}
	for i, r := range runs {
		c.Columns = append(c.Columns, r.mode.label(cfg))
		for row, p := range adaptiveColumn(cfg, r.mode, r.seconds, xAxis, usersAxis, rateAxis) {
			c.Panels[row*len(runs)+i] = p
		}
	}
	return c
}

// adaptiveColumn returns the four panels of a run, top to bottom.
func adaptiveColumn(cfg adaptiveConfig, m admissionMode, rows []secondRow, xAxis, usersAxis, rateAxis svgchart.Axis) []svgchart.Panel {
	// line is a figure of each second of the run; level is a dashed line
	// across the panel, as for a limit or a target.
	line := func(name, color string, width float64, y func(secondRow) float64) svgchart.Series {
		p := make([]svgchart.Point, len(rows))
		for k, s := range rows {
			p[k] = svgchart.Point{X: float64(s.second), Y: y(s)}
		}
		return svgchart.Series{Name: name, Color: color, Width: width, Points: p}
	}
	level := func(name, color string, y float64) svgchart.Series {
		return svgchart.Series{Name: name, Color: color, Dashed: true, Width: 1.2, Points: []svgchart.Point{{X: 0, Y: y}, {X: xAxis.Max(), Y: y}}}
	}
	rateName, title, peak := "admission rate (controller)", "Admission", 0.0
	if !m.adaptive {
		rateName = "admission rate (fixed)"
	}
	for _, s := range rows {
		peak = max(peak, s.admittedPerMin)
	}
	if peak > rateAxis.Max() {
		title = fmt.Sprintf("Admission (the admitted line leaves the scale, up to %.0f/min)", peak)
	}
	return []svgchart.Panel{{
		Title: "Visitors", X: xAxis, Y: usersAxis,
		Series: []svgchart.Series{
			line("joined", "#8c8c8c", 0, func(s secondRow) float64 { return float64(s.joined) }),
			line("waiting in line", "#1f77b4", 0, func(s secondRow) float64 { return float64(s.waiting) }),
			line("in the shop", "#ff7f0e", 0, func(s secondRow) float64 { return float64(s.inShop) }),
			line("ordered", "#2ca02c", 0, func(s secondRow) float64 { return float64(s.ordered) }),
		},
	}, {
		Title: title, X: xAxis, Y: rateAxis,
		Series: []svgchart.Series{
			level("shop's limit (unknown to waitq)", "#555555", cfg.shopPerMinute()),
			line(fmt.Sprintf("admitted (%d s average)", admittedSpan), "#17becf", 0, func(s secondRow) float64 { return s.admittedPerMin }),
			line(rateName, "#9467bd", 2.2, func(s secondRow) float64 { return float64(s.rate) }),
		},
	}, {
		Title: "Shop latency, p95 of each second's pages", X: xAxis, Y: svgchart.Decades("ms (log)", 1, 4),
		Series: []svgchart.Series{
			level(fmt.Sprintf("target %d ms", cfg.target.Milliseconds()), "#111111", float64(cfg.target)/float64(time.Millisecond)),
			line(fmt.Sprintf("guard's report (%s window)", adaptiveWindow), "#8c564b", 1.2, func(s secondRow) float64 { return s.guardP95 }),
			line("as visitors saw it", "#d62728", 0, func(s secondRow) float64 { return s.p95 }),
		},
	}, {
		Title: "Failed pages (503, timeouts), each second", X: xAxis, Y: svgchart.Linear("% of pages", 100),
		Series: []svgchart.Series{
			level("maxErrorRate 5%", "#111111", 100*queue.DefaultMaxErrorRate),
			line("failed", "#d62728", 0, func(s secondRow) float64 { return s.errorPct }),
		},
	}}
}

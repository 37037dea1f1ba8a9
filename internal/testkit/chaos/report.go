package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Markdown renders the report as the campaign's tables: the invariants,
// the operations by outcome, the faults by kind with their recovery, the
// statuses, and every fault with its own recovery.
func (r *Report) Markdown() string {
	var b strings.Builder
	row := func(cells ...any) {
		b.WriteString("|")
		for _, c := range cells {
			fmt.Fprintf(&b, " %v |", c)
		}
		b.WriteString("\n")
	}

	b.WriteString("| invariant | result |\n|---|---|\n")
	row("acknowledged joins lost", len(r.Lost))
	row("acknowledged joins swept after their client was away past the grace (reported, not a violation)", len(r.SweptAway))
	for _, e := range r.specs {
		if n, sampled := r.MaxHolders[e.ID]; sampled {
			row("max holders of "+e.ID+" (capacity)", fmt.Sprintf("%d (%d)", n, e.Capacity))
		}
	}
	row("samples over the capacity in force", len(r.OverCapacity))
	row("holders rising past the capacity in force, or while paused", len(r.AdmittedOver))
	row(fmt.Sprintf("events admitting more than the rate in force allows (%d windows checked)", r.RateWindows), len(r.OverRate))
	row("requests reaching the origin without a valid admission", len(r.Unadmitted))
	row("most admitted visitors at the origin at once", r.OriginMax)
	row("moments the origin saw more visitors than the capacity in force", len(r.OriginOver))
	row("holds ended for clients never told of them, in touch all along", len(r.UntoldTurns))
	row("holds ended for clients never told of them, out of touch half a hold or more (reported, not a violation)", r.Excused)
	row("clients that put the page away past the grace and came back", r.Aways)
	row("turns lapsed for clients back within the claim window", len(r.LostTurns))
	if r.hasArrivalWindow() {
		row("admissions whose client reached the shop (of them held when their arrival window closed)", fmt.Sprintf("%d (%d)", r.Arrived, r.ArrivedAtRisk))
		row("of them freed as a no-show's after their arrival was marked, or with no fault on Redis or a gateway to excuse it", len(r.ArrivedFreed))
		row("of them freed as a no-show's while a fault on Redis or a gateway, or a visit at the window's end, kept every report from landing (reported, not a violation)", len(r.ArrivedFreedExcused))
		row("no-shows' slots freed before the hold's end", r.NoShowsFreed)
		row("no-shows' slots kept to the end, a rebuild overlapping the hold (reported, not a violation)", r.NoShowsRestored)
		row("no-shows' slots kept to the end with no rebuild", len(r.NoShowsKept))
		row("slots freed as a no-show's before the arrival window closed", len(r.FreedEarly))
	}
	row("double admissions", len(r.DoubleAdmissions))
	row("order violations (admitted past someone waiting ahead)", len(r.OrderViolations))
	row("places that are none of the user's stamps or drawn score", len(r.ScoreViolations))
	row("admissions before a drop's opening", len(r.EarlyAdmissions))
	row(fmt.Sprintf("status gaps over %v with no fault on a gateway or Redis", r.gapLimit), len(r.GapViolations))
	row("items answered sold to two buyers with no rebuild between", len(r.SoldTwice))
	row("items answered sold to two buyers with a rebuild between: a sale Redis lost (reported, not a violation)", len(r.SoldTwiceRebuilt))
	row("items sold at the end not through the shop (of "+fmt.Sprint(r.ItemsSold)+" sold)", len(r.SoldWithoutShop))
	row("items sold at the end whose shop confirms went unanswered (reported, not a violation)", r.SoldUnanswered)
	row("forged confirms answered 200", len(r.ForgedSold))
	row("entry tokens that did not verify", r.BadTokens)
	row("admissions first read after their hold ended (reported, not a violation)", r.Stale)
	row("faults not recovered from", len(r.Unrecovered))
	row("users still in line after the drain", r.StillWaiting)
	row("clients still following after the drain", len(r.Unfinished))

	b.WriteString("\n| operation | outcome | count |\n|---|---|---|\n")
	for _, op := range []struct {
		name string
		m    map[Outcome]int
	}{{"join", r.Joins}, {"leave", r.Leaves}, {"release", r.Releases}, {"connect", r.Connects}} {
		total := 0
		for _, o := range slices.Sorted(maps.Keys(op.m)) {
			row(op.name, o, op.m[o])
			total += op.m[o]
		}
		row(op.name, "**attempted**", total)
	}
	causes := slices.SortedFunc(maps.Keys(r.NoAnswer), func(a, b string) int {
		if d := r.NoAnswer[b] - r.NoAnswer[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	for _, c := range causes[:min(len(causes), 5)] {
		row("connect", "no answer: "+strings.ReplaceAll(c, "|", "/"), r.NoAnswer[c])
	}
	row("admitted frame", "distinct admissions", r.Admissions)
	for _, tr := range slices.Sorted(maps.Keys(r.AdmissionsBy)) {
		row("admitted frame", "read over "+tr, r.AdmissionsBy[tr])
	}
	for _, o := range slices.Sorted(maps.Keys(r.AdminChanges)) {
		row("admin change", o, r.AdminChanges[o])
	}
	for _, k := range slices.Sorted(maps.Keys(r.GuardRequests)) {
		for _, o := range slices.Sorted(maps.Keys(r.GuardRequests[k])) {
			row("guard "+k, o, r.GuardRequests[k][o])
		}
	}
	for _, op := range slices.Sorted(maps.Keys(r.ItemHolds)) {
		for _, o := range slices.Sorted(maps.Keys(r.ItemHolds[op])) {
			row("item "+op, o, r.ItemHolds[op][o])
		}
	}
	for _, via := range slices.Sorted(maps.Keys(r.Sales)) {
		for _, o := range slices.Sorted(maps.Keys(r.Sales[via])) {
			row("confirm, "+via, o, r.Sales[via][o])
		}
	}
	for _, o := range slices.Sorted(maps.Keys(r.ArrivalReports)) {
		row("arrival report", o, r.ArrivalReports[o])
	}
	row("origin", "requests received", r.OriginRequests)
	row("canary join", "acknowledged and in Redis", fmt.Sprintf("%d of %d", r.CanariesSeen, r.Canaries))

	b.WriteString("\n| fault | injected | skipped | recovery p50 | recovery max |\n|---|---|---|---|---|\n")
	byKind := map[Kind][]time.Duration{}
	for _, rec := range r.Recoveries {
		if rec.Recovered {
			byKind[rec.Fault.Kind] = append(byKind[rec.Fault.Kind], rec.Took())
		}
	}
	kinds := maps.Clone(r.FaultsByKind)
	maps.Copy(kinds, r.FaultsSkipped)
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		ds := byKind[k]
		slices.Sort(ds)
		p50, worst := "–", "–"
		if len(ds) > 0 {
			p50, worst = seconds(ds[len(ds)/2]), seconds(ds[len(ds)-1])
		}
		row(k, r.FaultsByKind[k], r.FaultsSkipped[k], p50, worst)
	}

	b.WriteString("\n| statuses | |\n|---|---|\n")
	row("status frames read", r.Statuses)
	row("holder samples, line samples", fmt.Sprintf("%d, %d", r.HolderSamples, r.LineSamples))
	row("longest gap a following client saw", describeGap(r.LongestGap))
	row("longest gap with no fault on a gateway or Redis", describeGap(r.LongestUnexcusedGap))

	b.WriteString(fmt.Sprintf("\n| service | not ready | of it, not explained by a fault on it (%v grace) | longest unexplained | what the poller saw |\n|---|---|---|---|---|\n", readyGrace))
	for _, u := range r.Unready {
		longest := "–"
		if u.Longest > 0 {
			longest = seconds(u.Longest) + " from " + u.LongestFrom.Format("15:04:05.0")
		}
		row(u.Target, seconds(u.Total), seconds(u.Unexplained), longest, u.describeWhy())
	}

	b.WriteString("\n| # | fault | target | start | lasted | ready again | canary in Redis | recovery |\n|---|---|---|---|---|---|---|---|\n")
	for i, rec := range r.Recoveries {
		f := rec.Fault
		row(i+1, f.Kind, f.Target, f.Start.Format("15:04:05.0"), seconds(f.Healed.Sub(f.Start)),
			after(rec.Ready), after(rec.Canary), after(rec.Took()))
	}

	if len(r.ArrivedFreedExcused) > 0 {
		b.WriteString("\nClients in the shop freed as no-shows, excused:\n\n")
		for _, s := range r.ArrivedFreedExcused {
			b.WriteString("- " + s + "\n")
		}
	}
	if len(r.SoldTwiceRebuilt) > 0 {
		b.WriteString("\nSales a rebuild lost (excused):\n\n")
		for _, s := range r.SoldTwiceRebuilt {
			b.WriteString("- " + s + "\n")
		}
	}
	if v := r.Violations(); len(v) > 0 {
		b.WriteString("\nViolations:\n\n")
		for _, s := range v {
			b.WriteString("- " + s + "\n")
		}
	}
	return b.String()
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func after(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return seconds(d)
}

func describeGap(g Gap) string {
	if g.User == "" {
		return "none"
	}
	return fmt.Sprintf("%s (%s/%s from %s)", seconds(g.To.Sub(g.From)), g.Event, g.User, g.From.Format("15:04:05.0"))
}

// hasArrivalWindow reports whether an event checked has an arrival window.
func (r *Report) hasArrivalWindow() bool {
	return slices.ContainsFunc(r.specs, func(e EventSpec) bool { return e.ArrivalMs > 0 })
}

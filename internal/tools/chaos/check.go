package chaos

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/waitq/waitq/internal/testkit/testdraw"
)

// EventSpec is what the checker knows of an event.
type EventSpec struct {
	ID       string
	Capacity int64
	HoldMs   int64
	// OpensAt (unix ms) and Seed (hex, revealed at the opening) for a drop.
	OpensAt int64
	Seed    string
	// Paused: created paused (admin changes may open it).
	Paused bool
}

// Final is what Redis held for an event after the faults healed and the
// line drained.
type Final struct {
	Waiting       []Placed
	Holders       []string
	Served        map[string]int64 // user → served mark: the time of their last admission (or the admitted join's stamp if later)
	AdmittedTotal int64
}

// Config is what Check needs besides the history.
type Config struct {
	Events []EventSpec
	Final  map[string]Final // by event id
	// GapLimit: a gap in statuses longer than this, with no fault active
	// during it, is a violation.
	GapLimit time.Duration
	// FaultGrace: a fault on a gateway or on Redis excuses gaps that
	// overlap it or the FaultGrace after it healed (clients notice a dead
	// socket and reconnect). Faults elsewhere excuse none.
	FaultGrace time.Duration
	// TokenSkew is the clock difference the guard tolerates past a token's
	// expiry (pkg/entry's Verifier.Skew); ReleasedGrace how long after a
	// release was answered the guard may still pass its token (one poll of
	// the released list, and the poll's own time).
	TokenSkew, ReleasedGrace time.Duration
}

// Recovery is how long the system took to be whole again after a fault
// healed: its target ready again, and a join sent after the heal
// acknowledged and written to Redis.
type Recovery struct {
	Fault     Fault
	Ready     time.Duration // -1: the target never answered ready again
	Canary    time.Duration // -1: no canary after the heal made it into Redis
	Recovered bool
}

// Took is the recovery time: the later of the two.
func (r Recovery) Took() time.Duration { return max(r.Ready, r.Canary) }

// Report is the checker's verdict over a history.
type Report struct {
	Joins, Leaves, Releases, Connects map[Outcome]int
	Admissions                        int            // distinct admissions clients read
	AdmissionsBy                      map[string]int // by transport: "ws", "sse"
	BadTokens                         int            // admitted frames whose entry token did not verify
	// Stale counts admissions first read after their hold had ended (a
	// pause longer than the hold): not a broken promise, a late one.
	Stale                      int
	Statuses                   int64
	HolderSamples, LineSamples int
	Canaries, CanariesSeen     int

	FaultsByKind  map[Kind]int
	FaultsSkipped map[Kind]int
	FaultErrors   []string

	Lost             []string // acknowledged joins neither in line, admitted nor left
	StillWaiting     int      // users in line after the drain
	Unfinished       []string // clients still following when the drain ended
	MaxHolders       map[string]int64
	OverCapacity     []string // a sample above every capacity possibly in force within a hold and the longest fault before it
	AdmittedOver     []string // holders rose past the capacity possibly in force, or while surely paused
	DoubleAdmissions []string
	OrderViolations  []string
	ScoreViolations  []string // a place that is none of the user's stamps (or drawn scores)
	EarlyAdmissions  []string // a drop's admissions before its opening

	// The guard and its origin.
	GuardRequests    map[string]map[Outcome]int // by kind
	OriginRequests   int
	OriginMax        int // the most admitted visitors the origin saw at once
	Unadmitted       []string
	OriginOver       []string
	Expired, Excused int      // hold-ended statuses to clients never told of the admission; those a long gap excuses
	UntoldTurns      []string // of them, clients in touch all along
	AdminChanges     map[Outcome]int

	LongestGap, LongestUnexcusedGap Gap
	GapViolations                   []string
	Recoveries                      []Recovery
	Unrecovered                     []string

	gapLimit time.Duration
	specs    []EventSpec
}

type userKey struct{ event, user string }

// Check proves the campaign's invariants over h.
func Check(h *History, cfg Config) *Report {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := &Report{
		Joins: map[Outcome]int{}, Leaves: map[Outcome]int{}, Releases: map[Outcome]int{}, Connects: map[Outcome]int{},
		FaultsByKind: map[Kind]int{}, FaultsSkipped: map[Kind]int{}, MaxHolders: map[string]int64{},
		AdmissionsBy: map[string]int{}, GuardRequests: map[string]map[Outcome]int{}, AdminChanges: map[Outcome]int{},
		Statuses: h.Statuses, HolderSamples: len(h.Holders), LineSamples: len(h.Lines),
		gapLimit: cfg.GapLimit, specs: cfg.Events,
	}
	specs := map[string]EventSpec{}
	for _, e := range cfg.Events {
		specs[e.ID] = e
	}

	// What each user may have joined with: a 202's stamp, or a join that got
	// no answer (it may be in Kafka).
	stamps := map[userKey][]int64{}
	possible := map[userKey]int{}
	acked := map[userKey]bool{}
	firstJoin := map[userKey]time.Time{} // when the user's first join that may have landed was sent
	for _, j := range h.Joins {
		r.Joins[j.Outcome]++
		k := userKey{j.Event, j.User}
		if f, seen := firstJoin[k]; (j.Acked() || j.Outcome.Maybe()) && (!seen || j.At.Before(f)) {
			firstJoin[k] = j.At
		}
		switch {
		case j.Acked():
			stamps[k] = append(stamps[k], j.Stamp)
			possible[k]++
			acked[k] = true
		case j.Outcome.Maybe():
			possible[k]++
		}
	}
	left := map[userKey]bool{}
	for _, l := range h.Leaves {
		r.Leaves[l.Outcome]++
		if l.Outcome == "202" || l.Outcome.Maybe() {
			left[userKey{l.Event, l.User}] = true
		}
	}
	for _, rl := range h.Releases {
		o := rl.Outcome
		if rl.Via == "http" && o == "200" {
			o = Outcome(fmt.Sprintf("200 released=%v", rl.Released))
		}
		r.Releases[Outcome(rl.Via+" "+string(o))]++
	}
	for _, c := range h.Connects {
		r.Connects[c.Outcome]++
	}

	// Distinct admissions per user, by the end of the hold they name.
	admissions := map[userKey]map[int64]Admission{}
	for _, a := range h.Admissions {
		k := userKey{a.Event, a.User}
		if admissions[k] == nil {
			admissions[k] = map[int64]Admission{}
		}
		if first, seen := admissions[k][a.ExpiresAt]; seen {
			if a.At.Before(first.At) { // the earliest receipt bounds when it happened
				first.At = a.At
				admissions[k][a.ExpiresAt] = first
			}
		} else {
			admissions[k][a.ExpiresAt] = a
			r.Admissions++
			r.AdmissionsBy[a.Transport]++
			if !a.TokenValid {
				r.BadTokens++
			}
		}
	}
	for k, as := range admissions {
		for _, a := range as {
			if a.At.UnixMilli() > a.ExpiresAt {
				r.Stale++
			}
		}
		if len(as) > possible[k] {
			r.DoubleAdmissions = append(r.DoubleAdmissions, fmt.Sprintf("%s/%s: admitted %d times (holds ending %v) for %d joins",
				k.event, k.user, len(as), slices.Sorted(maps.Keys(as)), possible[k]))
		}
	}

	// The end state: every acknowledged join is in line, admitted or left.
	for _, e := range cfg.Events {
		f := cfg.Final[e.ID]
		inLine := map[string]bool{}
		for _, p := range f.Waiting {
			inLine[p.User] = true
		}
		r.StillWaiting += len(f.Waiting)
		holding := map[string]bool{}
		for _, u := range f.Holders {
			holding[u] = true
		}
		extra, allowed := f.AdmittedTotal-int64(len(f.Served)), int64(0)
		for u, s := range f.Served {
			k := userKey{e.ID, u}
			if possible[k] == 0 {
				r.ScoreViolations = append(r.ScoreViolations, fmt.Sprintf("%s/%s: served but never joined", e.ID, u))
			} else if possible[k] == len(stamps[k]) && s < slices.Min(stamps[k]) {
				// The served mark is the admission's time: after the join.
				// (A join that may have landed unanswered has no stamp.)
				r.ScoreViolations = append(r.ScoreViolations, fmt.Sprintf("%s/%s: served mark %d before its first join, stamped %v", e.ID, u, s, stamps[k]))
			}
			allowed += int64(possible[k] - 1)
		}
		if extra > allowed {
			r.DoubleAdmissions = append(r.DoubleAdmissions, fmt.Sprintf("%s: admittedTotal %d for %d users served: %d admissions more than their joins allow",
				e.ID, f.AdmittedTotal, len(f.Served), extra-allowed))
		}
		for k := range acked {
			if k.event != e.ID {
				continue
			}
			_, served := f.Served[k.user]
			if !served && !inLine[k.user] && !holding[k.user] && !left[k] && len(admissions[k]) == 0 {
				r.Lost = append(r.Lost, fmt.Sprintf("%s/%s (stamps %v)", k.event, k.user, stamps[k]))
			}
		}
	}
	sort.Strings(r.Lost)
	for _, u := range h.Unfinished {
		r.Unfinished = append(r.Unfinished, fmt.Sprintf("%s/%s (last state %q, last frame %s at %s)", u.Event, u.User, u.State, u.LastFrame, u.At.Format("15:04:05.000")))
	}

	r.checkHolders(h, cfg)
	r.checkLines(h, specs, stamps, possible, acked)
	r.checkOrder(h, specs, stamps, possible, admissions, firstJoin)
	r.checkGaps(h, cfg)
	r.checkRecovery(h)
	r.checkOrigin(h, cfg, admissions)
	r.checkTurns(h, specs, admissions)
	return r
}

// drawn reports whether score is a drop's drawn place (below every stamp).
func (e EventSpec) drawn(score int64) bool { return e.OpensAt > 0 && score < 0 }

// checkLines checks every sampled place: a stamp of the user's, or, in a
// drop, the score the draw gives the user, for a join before the opening.
func (r *Report) checkLines(h *History, specs map[string]EventSpec, stamps map[userKey][]int64, possible map[userKey]int, acked map[userKey]bool) {
	bad := map[userKey]bool{} // report each user once
	for _, l := range h.Lines {
		e := specs[l.Event]
		for _, p := range l.Members {
			k := userKey{l.Event, p.User}
			if bad[k] {
				continue
			}
			var why string
			switch {
			case possible[k] == 0:
				why = "in line but never joined"
			case e.drawn(p.Score):
				if e.Seed == "" {
					break // not revealed: only the opening's samples can be judged
				}
				want, err := testdraw.Score(e.Seed, p.User)
				if err != nil || want != p.Score {
					why = fmt.Sprintf("at drawn score %d, the draw gives %d (%v)", p.Score, want, err)
				} else if acked[k] && possible[k] == len(stamps[k]) && !slices.ContainsFunc(stamps[k], func(s int64) bool { return s < e.OpensAt }) {
					why = fmt.Sprintf("drawn, but joined at %v, after the opening %d", stamps[k], e.OpensAt)
				}
			case possible[k] == len(stamps[k]) && !slices.Contains(stamps[k], p.Score):
				why = fmt.Sprintf("at score %d, its joins were stamped %v", p.Score, stamps[k])
			}
			if why != "" {
				bad[k] = true
				r.ScoreViolations = append(r.ScoreViolations, fmt.Sprintf("%s/%s: %s", l.Event, p.User, why))
			}
		}
	}
}

// checkOrder proves that every admission took the head of the line: no user
// admitted while someone placed before them waited both in the last line
// sample surely before the admission step and in the first one after a
// client read it. The step ran at or before the time it was given (its
// hold's start; a hold recorded late, past the record grace, starts at its
// record, after the step), after the user's last sample in line before
// then, and after their first join was sent; Redis may run a request long
// after it was sent (a pause), and in another order than other clients'
// requests.
func (r *Report) checkOrder(h *History, specs map[string]EventSpec, stamps map[userKey][]int64, possible map[userKey]int, admissions map[userKey]map[int64]Admission, firstJoin map[userKey]time.Time) {
	lines := map[string][]Line{}
	for _, l := range h.Lines {
		lines[l.Event] = append(lines[l.Event], l)
	}
	for _, ls := range lines {
		slices.SortFunc(ls, func(a, b Line) int { return a.Sent.Compare(b.Sent) })
	}
	for k, as := range admissions {
		e, ok := specs[k.event]
		if !ok {
			continue
		}
		ls := lines[k.event]
		for expires, a := range as {
			at := time.UnixMilli(expires - e.HoldMs) // the admission step's clock
			if e.OpensAt > 0 && at.UnixMilli() < e.OpensAt {
				r.EarlyAdmissions = append(r.EarlyAdmissions, fmt.Sprintf("%s/%s admitted at %d, the drop opens at %d", k.event, k.user, at.UnixMilli(), e.OpensAt))
			}
			// before: the last sample answered before the step's time, if
			// the user is in it; else (the step may have run earlier: a hold
			// renewed at its late record) the user's last sample in line
			// before it, or, never sampled in line, the last answered before
			// its first join was sent. after: the first sent after a client
			// read the admission.
			i := sort.Search(len(ls), func(i int) bool { return !ls[i].Got.Before(at) }) - 1
			if i >= 0 {
				if _, in := placeOf(ls[i], k.user); !in {
					u := i - 1
					for u >= 0 && !slices.ContainsFunc(ls[u].Members, func(p Placed) bool { return p.User == k.user }) {
						u--
					}
					if u < 0 {
						joined := firstJoin[k]
						u = sort.Search(len(ls), func(i int) bool { return !ls[i].Got.Before(joined) }) - 1
					}
					i = u
				}
			}
			j := sort.Search(len(ls), func(j int) bool { return ls[j].Sent.After(a.At) })
			if i < 0 || j >= len(ls) {
				continue
			}
			before, after := ls[i], ls[j]
			score, known := placeOf(before, k.user)
			if s := stamps[k]; !known && len(s) > 0 && len(s) == possible[k] && slices.Min(s) >= e.OpensAt {
				// Never sampled in line (the fast track): its earliest stamp,
				// which is at or before its place. Not when a join of its
				// may have landed unanswered: that one's stamp is unknown,
				// and may be earlier.
				score, known = slices.Min(s), true
			}
			if !known {
				continue
			}
			// Waiting in both at the same place: a user admitted and queued
			// again by a later join is at another place after.
			still := map[Placed]bool{}
			for _, p := range after.Members {
				still[p] = true
			}
			for _, p := range before.Members {
				if p.User == k.user || !still[p] {
					continue
				}
				if p.Score < score || p.Score == score && p.User < k.user {
					r.OrderViolations = append(r.OrderViolations, fmt.Sprintf("%s: %s (place %d) admitted at %s while %s (place %d) waited ahead of it",
						k.event, k.user, score, at.Format("15:04:05.000"), p.User, p.Score))
					break
				}
			}
		}
	}
	sort.Strings(r.OrderViolations)
}

func placeOf(l Line, user string) (int64, bool) {
	for _, p := range l.Members {
		if p.User == user {
			return p.Score, true
		}
	}
	return 0, false
}

// checkGaps finds the longest gaps in statuses, and those no fault excuses.
func (r *Report) checkGaps(h *History, cfg Config) {
	for _, g := range h.Gaps {
		d := g.To.Sub(g.From)
		if d > r.LongestGap.To.Sub(r.LongestGap.From) {
			r.LongestGap = g
		}
		if excused(h.Faults, g, cfg.FaultGrace) {
			continue
		}
		if d > r.LongestUnexcusedGap.To.Sub(r.LongestUnexcusedGap.From) {
			r.LongestUnexcusedGap = g
		}
		if d > cfg.GapLimit {
			r.GapViolations = append(r.GapViolations, fmt.Sprintf("%s/%s: no status for %v from %s, no fault on a gateway or Redis",
				g.Event, g.User, d.Round(time.Millisecond), g.From.Format("15:04:05.000")))
		}
	}
}

func excused(faults []Fault, g Gap, grace time.Duration) bool {
	for _, f := range faults {
		if f.Skipped || !f.stallsStatuses() {
			continue
		}
		end := f.Healed.Add(grace)
		if f.Healed.IsZero() || g.From.Before(end) && g.To.After(f.Start) {
			return true
		}
	}
	return false
}

// checkRecovery measures each fault's recovery from the readiness changes
// and the canaries.
func (r *Report) checkRecovery(h *History) {
	ready := slices.Clone(h.Readiness)
	slices.SortFunc(ready, func(a, b Ready) int { return a.At.Compare(b.At) })
	canaries := slices.Clone(h.Canaries)
	slices.SortFunc(canaries, func(a, b Canary) int { return a.Sent.Compare(b.Sent) })
	r.Canaries = len(canaries)
	for _, c := range canaries {
		if !c.Seen.IsZero() {
			r.CanariesSeen++
		}
	}
	for _, f := range h.Faults {
		if f.Skipped {
			r.FaultsSkipped[f.Kind]++
			continue
		}
		r.FaultsByKind[f.Kind]++
		if f.Err != "" {
			r.FaultErrors = append(r.FaultErrors, fmt.Sprintf("%s %s at %s: %s", f.Kind, f.Target, f.Start.Format("15:04:05.000"), f.Err))
		}
		if f.Healed.IsZero() {
			continue
		}
		rec := Recovery{Fault: f, Ready: -1, Canary: -1}
		// Ready: 0 if it was ready at the heal, else its first ready after.
		polled, okAtHeal := false, false
		for _, x := range ready {
			if x.Target != f.Target {
				continue
			}
			polled = true
			if !x.At.After(f.Healed) {
				okAtHeal = x.OK
				continue
			}
			if okAtHeal {
				break
			}
			if x.OK {
				rec.Ready = x.At.Sub(f.Healed)
				break
			}
		}
		if !polled || okAtHeal {
			rec.Ready = 0
		}
		i := sort.Search(len(canaries), func(i int) bool { return !canaries[i].Sent.Before(f.Healed) })
		for _, c := range canaries[i:] {
			if !c.Seen.IsZero() {
				rec.Canary = c.Seen.Sub(f.Healed)
				break
			}
		}
		rec.Recovered = rec.Ready >= 0 && rec.Canary >= 0
		if !rec.Recovered {
			r.Unrecovered = append(r.Unrecovered, fmt.Sprintf("%s %s healed at %s: ready after %v, canary after %v",
				f.Kind, f.Target, f.Healed.Format("15:04:05.000"), rec.Ready, rec.Canary))
		}
		r.Recoveries = append(r.Recoveries, rec)
	}
}

// Violations lists every invariant the history broke; empty means the
// campaign passed.
func (r *Report) Violations() []string {
	var v []string
	addAll := func(what string, items []string) {
		for _, it := range items {
			v = append(v, what+": "+it)
		}
	}
	addAll("lost", r.Lost)
	addAll("over capacity", r.OverCapacity)
	addAll("admitted past the capacity in force", r.AdmittedOver)
	addAll("origin: unadmitted request", r.Unadmitted)
	addAll("origin: over capacity", r.OriginOver)
	addAll("turn lost untold", r.UntoldTurns)
	addAll("double admission", r.DoubleAdmissions)
	addAll("order", r.OrderViolations)
	addAll("place", r.ScoreViolations)
	addAll("admitted before the opening", r.EarlyAdmissions)
	addAll("status gap", r.GapViolations)
	addAll("not recovered", r.Unrecovered)
	addAll("fault", r.FaultErrors)
	addAll("still following after the drain", r.Unfinished)
	if r.StillWaiting > 0 {
		v = append(v, fmt.Sprintf("not drained: %d users still in line", r.StillWaiting))
	}
	if r.BadTokens > 0 {
		v = append(v, fmt.Sprintf("entry tokens: %d admitted frames carried a token that did not verify", r.BadTokens))
	}
	return v
}

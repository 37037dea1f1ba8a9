package chaos

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"time"
)

// digits are the numbers of an error (addresses, ports) NoAnswer leaves
// out, and quoted are its quoted parts (URLs with a user's ticket).
var (
	digits = regexp.MustCompile(`[0-9]+`)
	quoted = regexp.MustCompile(`"[^"]*"`)
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
	// Rate is the admitPerMinute it was created with (0: none).
	Rate int64
	// ArrivalMs is its arrival window (arrivalSeconds in ms; 0: none): an
	// admission whose arrival at the shop is not reported within it is a
	// no-show, its slot freed (docs/api.md, arrivals and no-shows).
	ArrivalMs int64
}

// Final is what Redis held for an event after the faults healed and the
// line drained.
type Final struct {
	Waiting       []Placed
	Holders       []string
	Served        map[string]int64 // user → served mark: the time of their last admission (or the admitted join's stamp if later)
	AdmittedTotal int64
	// Untold counts the unrecorded holders (admissions nobody was told of)
	// that rebuild scenes emptied from Redis: each record may reach the log
	// after the rebuild read its end, its user is admitted again, and a
	// later rebuild counts both. The checker allows that many extra.
	Untold int64
	// Sold is the event's items sold at the end: item → buyer.
	Sold map[string]string
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
	// Grace is how long a client may go without a status and keep its
	// place: the gateways' disconnect grace, or for events that keep
	// places while away their keep time. An acknowledged join whose
	// client went without a status for longer (it could not reach a
	// gateway) may be swept from the line, as documented (SweptAway).
	Grace time.Duration
	// ClaimWindow is the events' claim window: a turn called while its
	// client was away waits that long (0: no event keeps places while
	// away).
	ClaimWindow time.Duration
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

	Lost []string // acknowledged joins neither in line, admitted nor left
	// SweptAway are the acknowledged joins neither in line, admitted nor
	// left whose client went without a status for longer than the grace:
	// the slot monitor removes them, as documented (reported, not a
	// violation).
	SweptAway []string
	// NoAnswer counts the connects with no answer by their error, numbers
	// (addresses, ports) left out.
	NoAnswer         map[string]int
	StillWaiting     int      // users in line after the drain
	Unfinished       []string // clients still following when the drain ended
	MaxHolders       map[string]int64
	OverCapacity     []string // a sample above every capacity possibly in force within a hold and the longest fault before it
	AdmittedOver     []string // holders rose past the capacity possibly in force, or while surely paused
	OverRate         []string // an event's first window with more admissions than the rate possibly in force allows
	RateWindows      int      // windows the rate was checked over
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
	// Aways counts the clients that closed their page on purpose and came
	// back; LostTurns are the turns told lapsed to a client never away for
	// the claim window (it came back in time and lost the turn).
	Aways        int
	LostTurns    []string
	AdminChanges map[Outcome]int

	// Arrivals (events with an arrival window, check_arrivals.go): the
	// guard's reports by outcome; the admissions whose client reached the
	// shop, and of them those still held when the window closed (at risk);
	// the no-shows' admissions freed before their end, those a rebuild
	// restored (kept to their end by design) and those kept without one.
	ArrivalReports                map[Outcome]int
	Arrived, ArrivedAtRisk        int
	NoShowsFreed, NoShowsRestored int
	NoShowsKept                   []string // a no-show's slot held to its end, no rebuild overlapping the hold
	ArrivedFreed                  []string // freed as a no-show's though in the shop, no fault excusing it
	ArrivedFreedExcused           []string // the same while a fault (or a visit at the window's end) kept the report from landing (reported, not a violation)
	FreedEarly                    []string // freed as a no-show's before its window closed
	NoShowsNeverFreed             []string // an event with an arrival window that freed no no-show's slot

	// The seat holds: the buyers' calls by op and the confirms by who sent
	// them ("shop", "forged: …"), each by outcome; the items sold at the
	// end, those whose only shop confirms for their buyer went unanswered
	// (reported, not a violation).
	ItemHolds, Sales map[string]map[Outcome]int
	ItemsSold        int
	SoldUnanswered   int
	SoldTwice        []string // an item answered sold to two buyers with no rebuild between
	SoldTwiceRebuilt []string // the same with a rebuild between: a sale Redis lost (reported, not a violation)
	SoldWithoutShop  []string // an item sold at the end with no shop confirm for its buyer answered 200
	ForgedSold       []string // a confirm without the shop's token answered 200

	LongestGap, LongestUnexcusedGap Gap
	GapViolations                   []string
	Recoveries                      []Recovery
	Unrecovered                     []string
	// Unready is each service's time not ready, and the part of it no
	// fault on the service explains (reported, not a violation).
	Unready []Unready

	gapLimit time.Duration
	specs    []EventSpec
}

type userKey struct{ event, user string }

// Check proves the campaign's invariants over h.
func Check(h *History, cfg Config) *Report {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := &Report{
		Joins: map[Outcome]int{}, Leaves: map[Outcome]int{}, Releases: map[Outcome]int{}, Connects: map[Outcome]int{}, NoAnswer: map[string]int{},
		FaultsByKind: map[Kind]int{}, FaultsSkipped: map[Kind]int{}, MaxHolders: map[string]int64{},
		AdmissionsBy: map[string]int{}, GuardRequests: map[string]map[Outcome]int{}, AdminChanges: map[Outcome]int{},
		ItemHolds: map[string]map[Outcome]int{}, Sales: map[string]map[Outcome]int{}, ArrivalReports: map[Outcome]int{},
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
	possible := map[userKey]int{}   // the joins that may have landed
	admissible := map[userKey]int{} // their visits: one admission each at most
	visits := map[userKey]map[string]bool{}
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
			acked[k] = true
		case !j.Outcome.Maybe():
			continue
		}
		possible[k]++
		// Every try of one visit may admit its user once (the page keeps
		// one Idempotency-Key per visit); a join without a visit is a
		// visit of its own.
		if j.Visit == "" {
			admissible[k]++
		} else if !visits[k][j.Visit] {
			if visits[k] == nil {
				visits[k] = map[string]bool{}
			}
			visits[k][j.Visit] = true
			admissible[k]++
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
		if c.Outcome == NoAnswer {
			r.NoAnswer[digits.ReplaceAllString(quoted.ReplaceAllString(c.Err, "…"), "N")]++
		}
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
		if len(as) > admissible[k] {
			r.DoubleAdmissions = append(r.DoubleAdmissions, fmt.Sprintf("%s/%s: admitted %d times (holds ending %v) for %d visits",
				k.event, k.user, len(as), slices.Sorted(maps.Keys(as)), admissible[k]))
		}
	}

	// The end state: every acknowledged join is in line, admitted or left
	// (or swept after its client was away past the grace: away is each
	// user's longest status gap, or the time after a leave that was never
	// taken, when the client walked away).
	away := map[userKey]time.Duration{}
	for _, g := range h.Gaps {
		k := userKey{g.Event, g.User}
		away[k] = max(away[k], g.To.Sub(g.From))
	}
	// A client whose leave was never taken (each try refused) walked away
	// after its last try: no status from then to the history's end.
	lastLeave := map[userKey]time.Time{}
	for _, l := range h.Leaves {
		k := userKey{l.Event, l.User}
		if l.At.After(lastLeave[k]) {
			lastLeave[k] = l.At
		}
	}
	end := h.end()
	for k, t := range lastLeave {
		if !left[k] && end.After(t) {
			away[k] = max(away[k], end.Sub(t))
		}
	}
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
		extra, allowed := f.AdmittedTotal-int64(len(f.Served)), f.Untold
		for u, s := range f.Served {
			k := userKey{e.ID, u}
			if possible[k] == 0 {
				r.ScoreViolations = append(r.ScoreViolations, fmt.Sprintf("%s/%s: served but never joined", e.ID, u))
			} else if possible[k] == len(stamps[k]) && s < slices.Min(stamps[k]) {
				// The served mark is the admission's time: after the join.
				// (A join that may have landed unanswered has no stamp.)
				r.ScoreViolations = append(r.ScoreViolations, fmt.Sprintf("%s/%s: served mark %d before its first join, stamped %v", e.ID, u, s, stamps[k]))
			}
			allowed += int64(admissible[k] - 1)
		}
		if extra > allowed {
			r.DoubleAdmissions = append(r.DoubleAdmissions, fmt.Sprintf("%s: admittedTotal %d for %d users served: %d admissions more than their visits allow",
				e.ID, f.AdmittedTotal, len(f.Served), extra-allowed))
		}
		for k := range acked {
			if k.event != e.ID {
				continue
			}
			_, served := f.Served[k.user]
			if !served && !inLine[k.user] && !holding[k.user] && !left[k] && len(admissions[k]) == 0 {
				if cfg.Grace > 0 && away[k] > cfg.Grace {
					r.SweptAway = append(r.SweptAway, fmt.Sprintf("%s/%s (no status for %v)", k.event, k.user, away[k].Round(time.Second)))
				} else {
					r.Lost = append(r.Lost, fmt.Sprintf("%s/%s (stamps %v)", k.event, k.user, stamps[k]))
				}
			}
		}
	}
	sort.Strings(r.Lost)
	sort.Strings(r.SweptAway)
	for _, u := range h.Unfinished {
		r.Unfinished = append(r.Unfinished, fmt.Sprintf("%s/%s (last state %q, last frame %s at %s)", u.Event, u.User, u.State, u.LastFrame, u.At.Format("15:04:05.000")))
	}

	r.checkAway(h, cfg, away)
	r.checkHolders(h, cfg)
	r.checkRate(h, cfg)
	r.checkLines(h, specs, stamps, possible, acked)
	r.checkOrder(h, specs, stamps, possible, admissions, firstJoin)
	r.checkGaps(h, cfg)
	r.checkRecovery(h)
	r.checkReadiness(h, lastReady(h.Readiness))
	r.checkOrigin(h, cfg, admissions)
	r.checkTurns(h, specs, admissions)
	r.checkSales(h, cfg)
	r.checkArrivals(h, cfg, admissions)
	return r
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
	addAll("admitted past the rate in force", r.OverRate)
	addAll("origin: unadmitted request", r.Unadmitted)
	addAll("origin: over capacity", r.OriginOver)
	addAll("turn lost untold", r.UntoldTurns)
	addAll("turn lost though back within the claim window", r.LostTurns)
	addAll("freed as a no-show though in the shop", r.ArrivedFreed)
	addAll("freed as a no-show before the arrival window closed", r.FreedEarly)
	addAll("no-shows never freed", r.NoShowsNeverFreed)
	addAll("no-show's slot kept to its end", r.NoShowsKept)
	addAll("double admission", r.DoubleAdmissions)
	addAll("order", r.OrderViolations)
	addAll("place", r.ScoreViolations)
	addAll("admitted before the opening", r.EarlyAdmissions)
	addAll("status gap", r.GapViolations)
	addAll("sold twice", r.SoldTwice)
	addAll("sold without the shop", r.SoldWithoutShop)
	addAll("forged confirm answered 200", r.ForgedSold)
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

// Package chaos is the fault campaign's history, nemesis plan and checker.
// The campaign (test/integration, TestFaultCampaign) runs waitq as
// containers under a steady load while a nemesis kills, pauses, restarts
// and cuts off its parts on a seeded schedule (Plan), and runs scenes at
// regular times: a broker outage longer than a hold, a rebuild after
// Redis was emptied, admin changes (pause, capacity, rate). Every client
// (WebSocket or server-sent events, some through waitq-guard) writes what
// it was told into a History, the origin behind the guard what it
// received, a sampler what Redis held, and Check proves the invariants
// over the whole history after the faults healed and the line drained.
// The checker reads only the history: it knows waitq's promises, not its
// code. A History is safe for concurrent use; Check and a Report are not.
package chaos

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

// Outcome is how an operation was answered: "202", "200", "409
// event_closed", or "error" when no answer came (the operation may or may
// not have taken effect).
type Outcome string

// NoAnswer is the outcome of an operation that got no answer.
const NoAnswer Outcome = "error"

// Timeout is the answer to a join or a leave that Kafka did not acknowledge
// in time: the message may still land (api.md, broker_unavailable).
const Timeout Outcome = "503 broker_unavailable"

// Maybe reports whether an operation so answered may have taken effect
// without saying so.
func (o Outcome) Maybe() bool { return o == NoAnswer || o == Timeout }

// Join is one join request.
type Join struct {
	Event, User string
	At          time.Time
	Outcome     Outcome
	Stamp       int64  // joinedAt of a 202, unix ms
	Visit       string // the Idempotency-Key sent ("": none, each join a visit of its own)
}

// Acked reports whether producer-api answered 202: Kafka holds the join.
func (j Join) Acked() bool { return j.Outcome == "202" }

// Leave is one leave request (DELETE on producer-api).
type Leave struct {
	Event, User string
	At          time.Time
	Outcome     Outcome
}

// Release is one release: over HTTP with the entry token (Outcome is the
// answer, Released what it said) or as a socket frame (Outcome "sent").
type Release struct {
	Event, User string
	At          time.Time
	Via         string // "http", "socket", or "guard" (the guard's done path)
	Outcome     Outcome
	Released    bool
	// Answered is when an HTTP release was answered (zero: no answer, or
	// not over HTTP): a released=true answer bounds when the hold ended.
	Answered time.Time
	// ExpiresAt names the admission released (unix ms; 0: unknown).
	ExpiresAt int64
}

// Admission is an admitted frame a client read.
type Admission struct {
	Event, User, Gateway string
	At                   time.Time
	ExpiresAt            int64  // unix ms: identifies the admission
	TokenValid           bool   // the entry token (a JWT) verified for this user and event, as of its hold, with this admission's jti
	Transport            string // "ws" or "sse"
}

// Connect is one attempt to open a status socket.
type Connect struct {
	Event, User, Gateway string
	At                   time.Time
	Outcome              Outcome // "101" (or "200" for a stream), a refusal, or "error"
	Transport            string  // "ws" or "sse"
	Err                  string  // with no answer: the client's error
}

// Gap is a stretch in which a user following the line got no status: from
// the last frame (or the start of following) to the next frame, across
// reconnects.
type Gap struct {
	Event, User string
	From, To    time.Time
}

// Unfinished is a client still following the line when the drain ended:
// never admitted, never told its turn had passed, never taken out.
type Unfinished struct {
	Event, User string
	State       string    // the last state a status frame said
	LastFrame   string    // the last frame read
	At          time.Time // when it was read
}

// Holders is one sample of the slot holders of an event (ZCARD active):
// the read was sent at Sent (zero: At) and answered at At.
type Holders struct {
	Event string
	Sent  time.Time
	At    time.Time
	N     int64
}

// sent is when the sample's read was sent.
func (s Holders) sent() time.Time {
	if s.Sent.IsZero() {
		return s.At
	}
	return s.Sent
}

// AdmittedCount is one sample of an event's admission counter
// (stats.admittedTotal), read between Sent and At.
type AdmittedCount struct {
	Event    string
	Sent, At time.Time
	Total    int64
}

// AdminChange is one admin PUT of an event's configuration the nemesis
// sent (a field absent from the PUT is -1 or ""): sent at Sent, answered
// at Answered (zero: no answer, so it may take effect at any time after).
type AdminChange struct {
	Event          string
	Sent, Answered time.Time
	Outcome        Outcome // "200", "503 store_unavailable", "error", ...
	Capacity       int64   // -1: unchanged
	Rate           int64   // admitPerMinute; -1: unchanged
	State          string  // "open", "paused"; "": unchanged
}

// OK reports whether the PUT was answered 200: stored, and its config
// record in the log.
func (a AdminChange) OK() bool { return a.Outcome == "200" }

// OriginRequest is one request the origin behind waitq-guard received,
// with the identity the guard gave it.
type OriginRequest struct {
	Event   string // the guard's event
	User    string // X-Waitq-User-Id ("" when the request came without)
	Expires int64  // X-Waitq-Expires (unix ms; 0 when absent)
	Path    string
	At      time.Time
}

// GuardRequest is one request a visitor sent to waitq-guard, or to a proxy
// asking it: Kind says what it carried ("enter", "visit", "done": an
// admitted visitor's; "none", "forged", "other-event", "expired",
// "released", "trick", "forwarded": requests that must not reach the
// origin; "arrival enter", "arrival visit", "arrival done", "arrival
// stay": a visitor's of the event with an arrival window, the last after
// its window closed), with " via nginx" or " via caddy" behind a proxy,
// Outcome the answer.
type GuardRequest struct {
	Event, User, Kind string
	At                time.Time
	Outcome           Outcome
}

// Expired is a client told that its hold ended (a status "expired") that
// never read an admitted frame of it.
type Expired struct {
	Event, User string
	At          time.Time
	Transport   string
}

// ItemHold is one call a buyer made on the seat holds with their entry
// token, through a gateway: Op "hold" (of Item; Outcome "201", "200",
// "409 item_sold", ...) or "give-back" (DELETE of their hold).
type ItemHold struct {
	Event, User, Item string
	Op                string
	Sent              time.Time
	Outcome           Outcome
}

// Sale is one confirm of an item (POST …/holds/{item}/confirm) for User,
// the buyer whose entry token the body carries: Via "shop" when the shop
// sent it with the event's shop token, or "forged: …" when the buyer sent
// it alone (no bearer, their entry token as the bearer, a made-up token).
// Sent and Answered (zero: no answer) bound when it took effect; SoldTo
// is the buyer a 200 named.
type Sale struct {
	Event, User, Item string
	Via               string
	Sent, Answered    time.Time
	Outcome           Outcome
	SoldTo            string
}

// ViaShop is the Via of a confirm the shop sent with its shop token.
const ViaShop = "shop"

// Forged reports whether the confirm was sent without the shop's token.
func (s Sale) Forged() bool { return s.Via != ViaShop }

// Sold reports whether the confirm was answered 200: the item sold.
func (s Sale) Sold() bool { return s.Outcome == "200" }

// Away is a client that closed its page on purpose (a phone put away)
// from From to To, then opened it again; an event that keeps places while
// away keeps theirs (docs/api.md, away).
type Away struct {
	Event, User string
	From, To    time.Time
}

// TurnLapsed is a client told its turn lapsed (a status "no_show"): called
// while away, not back within the claim window.
type TurnLapsed struct {
	Event, User string
	At          time.Time
}

// ArrivalReport is one arrival report the guard sent to a gateway (POST
// …/arrivals, one of its entry.ArriveTries) for the admission of User
// ending ExpiresAt: Outcome is the gateway's answer ("200": the arrival
// is marked, "409": not the user's current admission, "503", or "error"
// when none came).
type ArrivalReport struct {
	Event, User string
	ExpiresAt   int64
	Sent        time.Time
	Outcome     Outcome
}

// Freed is an admission first seen on its event's released list (the
// guards' refusal list, docs/api.md): its slot given back before the end
// of its hold, by its client's release or freed as a no-show's.
type Freed struct {
	Event, User string
	ExpiresAt   int64
	At          time.Time
}

// Placed is a user at a score in a sample of the line.
type Placed struct {
	User  string
	Score int64
}

// Line is one sample of an event's waiting line: the read was sent at Sent
// and answered at Got, so the line was this at some moment in between.
type Line struct {
	Event     string
	Sent, Got time.Time
	Members   []Placed
}

// Fault is one fault the nemesis injected: begun at Start, healed at
// Healed (zero when healing failed), or skipped (the target was not in a
// state to take it).
type Fault struct {
	Kind    Kind
	Target  string
	Role    Role
	Start   time.Time
	Healed  time.Time
	Err     string // why the fault could not be injected or healed
	Skipped bool
}

// stallsStatuses reports whether the fault can hold up status frames: one
// on a gateway or on Redis. Faults elsewhere must not.
func (f Fault) stallsStatuses() bool { return f.Role == Gateway || f.Role == Redis }

// Canary is one probe join: sent, acknowledged (zero if not), and seen in
// Redis (zero if never).
type Canary struct {
	Sent, Acked, Seen time.Time
}

// Ready is a change in a service's readiness (/readyz) as the poller saw it:
// ready or not, or why not.
type Ready struct {
	Target string
	At     time.Time
	OK     bool
	// Why is what the poller saw instead of a 200: the container's state
	// ("exited 2", "paused"), no published port, the answer's status and
	// reason, or the error with no answer ("timeout", "refused").
	Why string `json:",omitempty"`
}

// History is everything the campaign's clients, sampler and nemesis saw.
// It is safe for concurrent use.
type History struct {
	mu         sync.Mutex
	Joins      []Join
	Leaves     []Leave
	Releases   []Release
	Admissions []Admission
	Connects   []Connect
	Gaps       []Gap
	Holders    []Holders
	Lines      []Line
	Counts     []AdmittedCount
	Faults     []Fault
	Canaries   []Canary
	Readiness  []Ready
	Unfinished []Unfinished
	Admin      []AdminChange
	Origin     []OriginRequest
	Guard      []GuardRequest
	Expired    []Expired
	ItemHolds  []ItemHold
	Sales      []Sale
	Aways      []Away
	Lapses     []TurnLapsed
	Arrivals   []ArrivalReport
	Freed      []Freed
	// Statuses counts the status frames read.
	Statuses int64
}

// end is when the history's last sample of a line was read (zero when
// none was).
func (h *History) end() time.Time {
	var t time.Time
	for _, l := range h.Lines {
		if l.Got.After(t) {
			t = l.Got
		}
	}
	return t
}

// add appends v to *s under the history's lock.
func add[T any](h *History, s *[]T, v T) {
	h.mu.Lock()
	*s = append(*s, v)
	h.mu.Unlock()
}

func (h *History) AddJoin(v Join)           { add(h, &h.Joins, v) }
func (h *History) AddLeave(v Leave)         { add(h, &h.Leaves, v) }
func (h *History) AddRelease(v Release)     { add(h, &h.Releases, v) }
func (h *History) AddAdmission(v Admission) { add(h, &h.Admissions, v) }
func (h *History) AddConnect(v Connect)     { add(h, &h.Connects, v) }
func (h *History) AddGap(v Gap)             { add(h, &h.Gaps, v) }
func (h *History) AddHolders(v Holders)     { add(h, &h.Holders, v) }
func (h *History) AddLine(v Line)           { add(h, &h.Lines, v) }
func (h *History) AddCount(v AdmittedCount) { add(h, &h.Counts, v) }
func (h *History) AddFault(v Fault)         { add(h, &h.Faults, v) }
func (h *History) AddCanary(v Canary)       { add(h, &h.Canaries, v) }
func (h *History) AddReady(v Ready)         { add(h, &h.Readiness, v) }
func (h *History) AddUnfinished(v Unfinished) {
	add(h, &h.Unfinished, v)
}
func (h *History) AddAdmin(v AdminChange)     { add(h, &h.Admin, v) }
func (h *History) AddOrigin(v OriginRequest)  { add(h, &h.Origin, v) }
func (h *History) AddGuard(v GuardRequest)    { add(h, &h.Guard, v) }
func (h *History) AddExpired(v Expired)       { add(h, &h.Expired, v) }
func (h *History) AddItemHold(v ItemHold)     { add(h, &h.ItemHolds, v) }
func (h *History) AddSale(v Sale)             { add(h, &h.Sales, v) }
func (h *History) AddAway(v Away)             { add(h, &h.Aways, v) }
func (h *History) AddLapse(v TurnLapsed)      { add(h, &h.Lapses, v) }
func (h *History) AddArrival(v ArrivalReport) { add(h, &h.Arrivals, v) }
func (h *History) AddFreed(v Freed)           { add(h, &h.Freed, v) }

// AddStatuses counts n status frames read.
func (h *History) AddStatuses(n int64) {
	h.mu.Lock()
	h.Statuses += n
	h.mu.Unlock()
}

// WriteJSON writes the whole history to path, for a look at what a client
// saw when a check failed.
func (h *History) WriteJSON(path string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

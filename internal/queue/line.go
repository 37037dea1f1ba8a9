package queue

import "context"

// The line as a gateway keeps it: the places of the users it holds a
// socket of, learnt once (LineStore.Line's Sync) and then kept from the
// line's journal, which tells what changed in the line other than a join
// behind everyone (docs/data.md, "The line's journal"). A status round
// then asks Redis nothing per user.

// Place is where one user stands in an event.
type Place struct {
	// Rank is the 0-based rank in the waiting line, -1 when not waiting,
	// RankPrequeue when waiting in a drop's line before its opening: no
	// position exists until the draw, and none is told.
	Rank      int64
	StayUntil int64 // end of the user's stay (unix ms); 0 when a stay ended and the user is not in line; -1 when never admitted
	// Drawn is the 1-based place the draw gave the user among a drop's
	// pre-queue; 0 when they were not in it, or before the opening.
	Drawn int64
	// Turn is, for a user called while away (Away), the end of their claim
	// window (unix ms); TurnLapsed when the call lapsed since they were
	// last served; TurnMoved when their place moved to another browser or
	// device since (a resume link, resume.go); TurnNone otherwise.
	Turn int64
}

// Place.Turn's values besides a claim window's end.
const (
	TurnNone   = 0
	TurnLapsed = -2
	TurnMoved  = -3
)

// RankPrequeue is the Rank of a user in a drop's line before its opening.
const RankPrequeue = -2

// RankRebuilding is the Rank of every user of an event whose live state is
// being rebuilt from its log: no place can be told meanwhile.
const RankRebuilding = -3

// InLine reports whether the user is waiting in the line.
func (p Place) InLine() bool { return p.Rank >= 0 || p.Rank == RankPrequeue }

// StatusBatch is the state of one event for a set of users, read at once
// (GatewayStore.Status).
type StatusBatch struct {
	Total         int64 // users waiting
	AdmittedTotal int64 // users ever admitted
	// AdmitPerMinute is an adaptive event's effective rate, -1 for a fixed
	// rate (the configuration's) or a controller not started yet.
	AdmitPerMinute int64
	Turns          Turns
	Places         []Place // one per user asked about, in order
	SlotAt         []int64 // per place: when a slot frees for it if holders keep theirs (unix ms; 0: one is free)
}

// Head is what every read of an event's places says of the event.
type Head struct {
	Total         int64 // users waiting
	AdmittedTotal int64 // users ever admitted
	// AdmitPerMinute is an adaptive event's effective rate, -1 for a fixed
	// rate (the configuration's) or a controller not started yet.
	AdmitPerMinute int64
	OpensAt        int64 // a drop's opening (unix ms; 0: none)
	Rebuilding     bool
	Capacity       int64
	HoldMs         int64
	Turns          Turns
}

// Turns counts an event's turns that came while their people were away
// (Away): the ones waiting for them now, and ever called, claimed and
// lapsed; in an EventStatus also the waiting people away now.
type Turns struct {
	Away         int64 `json:"away"`
	Called       int64 `json:"called"`
	CalledTotal  int64 `json:"calledTotal"`
	ClaimedTotal int64 `json:"claimedTotal"`
	LapsedTotal  int64 `json:"lapsedTotal"`
}

// RawPlace is where one user stands, before what may be told of it is
// chosen (Head.Told).
type RawPlace struct {
	Rank       int64 // 0-based rank in the waiting line; -1 when not waiting
	StayUntil  int64 // as Place's
	Unrecorded bool  // the stay's admission is not yet in the log
	Drawn      int64 // 0-based place among the drop's pre-queue; -1 when not in it
	SlotAt     int64 // when a slot frees for the user if holders keep theirs (unix ms; 0: one is free)
	Score      float64
	At         JournalPos // where the line's journal stood when it was read
	Turn       int64      // as Place's
}

// Told is what a status says of raw at nowMs: no position before a drop's
// opening (RankPrequeue) nor while the event is rebuilt (RankRebuilding);
// the drawn place only from the opening; an unrecorded stay as no stay,
// the next in line (its stay does not end before it is recorded, so its
// user is never told a stay ended). The SlotAt that goes with it is
// Head.SlotTold's.
func (h Head) Told(raw RawPlace, nowMs int64) Place {
	p := Place{Rank: raw.Rank, StayUntil: raw.StayUntil, Turn: raw.Turn}
	if p.Rank >= 0 && nowMs < h.OpensAt {
		p.Rank = RankPrequeue
	}
	if raw.Unrecorded {
		p.Rank, p.StayUntil = 0, -1
	}
	if h.Rebuilding {
		p.Rank, p.Turn = RankRebuilding, TurnNone
	}
	if h.OpensAt > 0 && nowMs >= h.OpensAt && raw.Drawn >= 0 {
		p.Drawn = raw.Drawn + 1
	}
	return p
}

// SlotTold is the SlotAt a status tells with raw: none unless a position
// is told.
func (h Head) SlotTold(raw RawPlace, nowMs int64) int64 {
	if raw.Rank < 0 || raw.Unrecorded || h.Rebuilding || nowMs < h.OpensAt {
		return 0
	}
	return raw.SlotAt
}

// Batch is the StatusBatch of a head with no places yet.
func (h Head) Batch(n int) StatusBatch {
	return StatusBatch{Total: h.Total, AdmittedTotal: h.AdmittedTotal, AdmitPerMinute: h.AdmitPerMinute, Turns: h.Turns,
		Places: make([]Place, 0, n), SlotAt: make([]int64, 0, n)}
}

// JournalPos is a point in an event's line journal.
type JournalPos struct {
	Epoch string // when the journal was started ("": none known)
	Seq   int64  // elements since
}

// JournalElement is one element of an event's line journal: what one
// script call changed in the line other than a join behind everyone
// (docs/data.md, "The line's journal").
type JournalElement struct {
	Seq        int64     // its number in the journal's epoch, from 1
	Joined     []LineKey // joins placed ahead of someone in line
	Left       []LineKey // users taken out of the line: leaves, sweeps
	Pre        []LineKey // joins added to a drop's pre-queue
	Popped     int64     // how many of the line's first were admitted
	LastPopped LineKey   // the last of them
	Detached   []string  // users whose presence a gateway let go
}

// LineKey is a user's place in the line as the sorted set keeps it.
type LineKey struct {
	Score float64
	User  string
}

// Less reports whether a comes before b in the line: by score, then by the
// user id's bytes, as Redis orders equal scores by member.
func (a LineKey) Less(b LineKey) bool {
	return a.Score < b.Score || a.Score == b.Score && a.User < b.User
}

// LineRequest is one read of a gateway's (LineStore.Line).
type LineRequest struct {
	Sync    []string   // users whose places to learn (and whose presence to hold)
	Since   JournalPos // the journal's elements after this point
	NowMs   int64
	Gateway uint64 // the reading gateway (GatewayID)
}

// LineReply is what LineStore.Line read.
type LineReply struct {
	Head   Head
	Synced []RawPlace // one per LineRequest.Sync, in order
	At     JournalPos // where the journal stands now
	// Reset: Since is of another epoch or no longer in the journal, or an
	// element could not be read; Elements is empty and every place must be
	// learnt again.
	Reset    bool
	Elements []JournalElement // the journal's elements after Since, in order
	Ends     []int64          // the ends of the stays running, in order (unix ms)
}

// LineStore is what a gateway keeps its users' places with.
type LineStore interface {
	// Line reads the places of req.Sync (marking them present, held by
	// req.Gateway), then the event's head and journal after req.Since
	// (marking the gateway alive): one round trip.
	Line(ctx context.Context, eventID string, req LineRequest) (LineReply, error)
	// Detach lets go of the presence of users the gateway held: their
	// disconnect grace runs from nowMs.
	Detach(ctx context.Context, eventID string, users []string, nowMs int64, gateway uint64) error
}

// GatewayIDs are below 2^40: a presence held by gateway g is stored as
// 2^50 + g (docs/data.md), exact in a float64 score.
const GatewayIDLimit = 1 << 40

package queue

import "maps"

// Replay folds an event's log (joins, leaves and records) into the live
// state it describes. Each user's messages share one partition, in order,
// and users do not affect each other in the log, so each partition may be
// folded by its own Replay and the results merged (Merge). Applying a
// message twice, or a whole log twice, gives the same state.
//
// The fold is the meaning of the log that ingest.lua and admission.lua
// apply live: a join takes a place unless the user waits already (the
// first place stands), holds a slot whose hold ends after the join's stamp,
// was admitted after it was stamped (the served mark), or was admitted and
// the join carries the join key of the join that last took them a place (a
// try of the admitted join sent after its admission); a leave removes
// the place; an admit record moves the user from the line to a slot until
// its expiresAt (the latest of an admission written twice) and records its
// served mark; a release or an expiry ends the
// hold; a sweep removes the place it names; a call takes the user out of
// the line, their turn waiting until its expiresAt (a join meanwhile takes
// no place), until an admit record (they came back) or a lapse record; a
// moved record takes the place it names away (its served mark kept), a
// movedin record gives it to its new user, a waiting place at its exact
// score or a called turn (docs/data.md, "Resume links"). A hold record holds its item
// for the user until its expiresAt, an unhold gives it back, a sold record
// sells it (an item sold to two users, which only a sale Redis lost can
// make, is the first one's: the earlier stamp), an unsold record undoes
// the user's sale of it; a release or an expiry of the user's slot ends
// their holds (a hold is live only while its buyer's slot is).
type Replay struct {
	users map[string]*replayUser
	// Config is the latest config record (nil: none read); Frozen and
	// Made a chain draw's latest drawfrozen and drawmade records.
	Config, Frozen, Made *Message
	// Partition is the partition this fold reads (ApplyAt's offsets').
	Partition int
	// Messages counts the messages applied, Unknown the ones skipped (an
	// op or version this code does not know, or another event's).
	Messages, Unknown int64
}

type replayUser struct {
	wait     int64            // the stamp of the join holding the place; 0: not waiting
	joinKey  string           // the join key of the join that last took a place ("": none)
	served   int64            // the served mark of the last admission; 0: never
	hold     int64            // the end of the stay; 0: none
	firstJn  int64            // the earliest join stamp: a drop's pre-queue membership
	joins    joinOffsets      // where the first joins lie in the log: a chain draw's entries
	admitted int64            // admissions, each with a newer served mark
	topScore int64            // the highest place admitted from (set when admitted > 0)
	items    map[string]int64 // held items -> the end of the hold
	sold     map[string]int64 // items bought -> the stamp of the sale's first record
	called   int64            // the end of the claim window of a call (Away); 0: not called
	place    int64            // the place a call left (set with called)
	lapsed   int64            // when a call lapsed; 0: never
	exact    bool             // wait is the score of a place moved in, not a join's stamp
	moved    int64            // when the place moved to another user (a resume link); 0: never
	moves    map[string]bool  // the moves in applied, by their link's nonce
}

// NewReplay returns an empty fold.
func NewReplay() *Replay { return &Replay{users: map[string]*replayUser{}} }

func (r *Replay) user(id string) *replayUser {
	u := r.users[id]
	if u == nil {
		u = &replayUser{joins: joinOffsets{part: r.Partition}}
		r.users[id] = u
	}
	return u
}

// Apply folds m, the next message of its partition, read at no offset.
func (r *Replay) Apply(m Message) { r.ApplyAt(NoOffset, m) }

// ApplyAt folds m, the next message of its partition, read at offset.
func (r *Replay) ApplyAt(offset int64, m Message) {
	r.Messages++
	switch m.Op {
	case OpConfig:
		r.Config = &m
		return
	case OpDrawFrozen:
		r.Frozen = &m
		return
	case OpDrawMade:
		r.Made = &m
		return
	}
	u := r.user(m.UserID)
	if m.Op == OpJoin {
		u.joins.add(offset, m.TS)
	}
	if !u.line(m) && !u.slot(m) && !u.move(m) {
		r.Messages--
		r.Unknown++
	}
}

// line folds m when it is about u's place in line or their turn: a join,
// a leave, a call, a lapse, a sweep. It reports whether it was.
func (u *replayUser) line(m Message) bool {
	switch m.Op {
	case OpJoin:
		if u.firstJn == 0 || m.TS < u.firstJn {
			u.firstJn = m.TS
		}
		if u.hold > m.TS || (u.served > 0 && m.TS <= u.served) || u.wait != 0 || u.called != 0 ||
			(u.served > 0 && m.JoinKey != "" && m.JoinKey == u.joinKey) {
			return true
		}
		u.wait, u.exact = m.TS, false
		if m.JoinKey != "" {
			u.joinKey = m.JoinKey
		}
	case OpLeave:
		u.wait = 0
	case OpCall:
		if m.ServedMark > u.served {
			u.wait, u.called, u.place, u.served = 0, m.ExpiresAt, m.Score, m.ServedMark
		}
	case OpLapse:
		if u.called != 0 {
			u.called, u.lapsed = 0, m.TS
		}
	case OpSweep:
		if u.holds(m) {
			u.wait = 0
		}
	default:
		return false
	}
	return true
}

// holds reports whether u waits at the place m names: a stamp names its
// place; a drawn (negative) score names the pre-queue place, which a join
// stamped before m holds; a place moved in (exact) is named by its score.
func (u *replayUser) holds(m Message) bool {
	return u.wait != 0 && (m.Score == u.wait || (m.Score < 0 && !u.exact && u.wait < m.TS))
}

// slot folds m when it is about u's slot or items: an admit, a release,
// an expiry, a hold, an unhold, a sale, an unsale. It reports whether it
// was.
func (u *replayUser) slot(m Message) bool {
	switch m.Op {
	case OpAdmit:
		u.admit(m)
	case OpRelease:
		// A release names the admission it ends by its served mark
		// (joinTs); one written late, after the user's next admission,
		// ends nothing. Records before it (joinTs 0) end the hold.
		if m.ServedMark != 0 && m.ServedMark != u.served {
			return true
		}
		u.hold, u.items = 0, nil
	case OpExpire:
		if u.hold <= m.TS {
			u.hold, u.items = 0, nil
		}
	case OpHold:
		if u.items == nil {
			u.items = map[string]int64{}
		}
		u.items[m.Item] = m.ExpiresAt
	case OpUnhold:
		delete(u.items, m.Item)
	case OpSold:
		delete(u.items, m.Item)
		if u.sold == nil {
			u.sold = map[string]int64{}
		}
		if _, ok := u.sold[m.Item]; !ok { // a repeat of the confirm keeps the first stamp
			u.sold[m.Item] = m.TS
		}
	case OpUnsold:
		delete(u.sold, m.Item)
	default:
		return false
	}
	return true
}

// admit folds an admit record.
func (u *replayUser) admit(m Message) {
	u.wait, u.called = 0, 0
	if m.ServedMark <= u.served && u.admitted > 0 {
		// The same admission written twice: by its admitter and by a
		// monitor tick that recorded it after RecordGrace, which gave
		// the hold a whole length from then (tick.lua). The later end
		// stands, unless the hold was given back meanwhile.
		if m.ServedMark == u.served && u.hold != 0 && m.ExpiresAt > u.hold {
			u.hold = m.ExpiresAt
		}
		return
	}
	if u.admitted == 0 || m.Score > u.topScore {
		u.topScore = m.Score
	}
	u.admitted++
	u.served, u.hold = m.ServedMark, m.ExpiresAt
}

// move folds a moved or movedin record (a resume link's use, move.lua).
// A moved record takes away the place it names, if u still has it (one
// written twice, or late, finds it gone); a movedin record, named by its
// link's nonce (ID), gives its place once. It reports whether m was one.
func (u *replayUser) move(m Message) bool {
	switch m.Op {
	case OpMoved:
		switch {
		case u.holds(m):
			u.wait = 0
		case u.called != 0 && u.place == m.Score:
			u.called = 0
		default:
			return true
		}
		u.moved, u.served = m.TS, max(u.served, m.ServedMark)
	case OpMovedIn:
		if u.moves[m.ID] {
			return true
		}
		if u.moves == nil {
			u.moves = map[string]bool{}
		}
		u.moves[m.ID] = true
		if m.ExpiresAt > 0 {
			u.wait, u.called, u.place, u.served = 0, m.ExpiresAt, m.Score, max(u.served, m.ServedMark)
		} else {
			u.wait, u.exact = m.Score, true
		}
		u.moved = 0
	default:
		return false
	}
	return true
}

// Merge adds o's users and counts to r; o's config wins when it is newer.
func (r *Replay) Merge(o *Replay) {
	maps.Copy(r.users, o.users)
	if o.Config != nil && (r.Config == nil || o.Config.TS >= r.Config.TS) {
		r.Config = o.Config
	}
	if o.Frozen != nil {
		r.Frozen = o.Frozen
	}
	if o.Made != nil {
		r.Made = o.Made
	}
	r.Messages += o.Messages
	r.Unknown += o.Unknown
}

// Rebuilt is an event's live state as its log describes it.
type Rebuilt struct {
	// Event is the configuration of the latest config record, and
	// ConfiguredAt that record's stamp (ts): a stored configuration stamped
	// later is newer than the log's (its record lies past the end read).
	Event        Event
	ConfiguredAt int64
	// Waiting, Holders, Served and Prequeue map user ids to the scores of
	// the keys of the same names (docs/data.md).
	Waiting, Holders, Served, Prequeue map[string]int64
	// JoinKeys maps user ids to the join key of the join that last took
	// them a place (the key :visits).
	JoinKeys map[string]string
	// Called maps the users called while away to the end of their claim
	// window, CallPlaces to the place each left; Lapsed the users whose
	// call lapsed to when (the keys called, callplaces, lapsed).
	Called, CallPlaces, Lapsed map[string]int64
	// Moved maps the users whose place moved to another user (a resume
	// link) to when (the moved key).
	Moved map[string]int64
	// AdmittedTotal counts the admissions; AdmittedMaxScore is the highest
	// place admitted from (0 when nobody was).
	AdmittedTotal, AdmittedMaxScore int64
	// Holds are the items held live (their buyer's slot and the hold
	// both ending after now), Sold the items sold, item -> buyer (of two
	// buyers, the one whose sale was recorded first).
	Holds map[string]Hold
	Sold  map[string]string
	// Ends maps each partition to the end the fold read (LogStats.Ends):
	// everything before it is in this state, so the consumer applies only
	// what lies past it.
	Ends map[int]int64
}

// turns notes u's call (or the lapse of their last one) in st.
func (st *Rebuilt) turns(id string, u *replayUser) {
	if u.called != 0 {
		st.Called[id], st.CallPlaces[id] = u.called, u.place
	}
	if u.lapsed != 0 {
		st.Lapsed[id] = u.lapsed
	}
	if u.moved != 0 {
		st.Moved[id] = u.moved
	}
}

// State returns the state the fold describes at nowMs: holds that ended by
// then are dropped; a drop's joins stamped before its opening take their
// drawn places. ok is false when no config record was read: the line has
// no event to belong to.
func (r *Replay) State(nowMs int64) (st Rebuilt, ok bool) {
	if r.Config == nil {
		return Rebuilt{}, false
	}
	st = Rebuilt{
		Event:        r.Config.ConfiguredEvent(),
		ConfiguredAt: r.Config.TS,
		Waiting:      map[string]int64{}, Holders: map[string]int64{}, Served: map[string]int64{}, Prequeue: map[string]int64{},
		JoinKeys: map[string]string{},
		Holds:    map[string]Hold{}, Sold: map[string]string{},
		Called: map[string]int64{}, CallPlaces: map[string]int64{}, Lapsed: map[string]int64{}, Moved: map[string]int64{},
	}
	places := r.drawPlaces(&st.Event)
	first := true
	soldAt := map[string]int64{} // item -> the stamp of the sale st.Sold keeps
	for id, u := range r.users {
		score, drawn := places.drawn(id, u)
		if drawn {
			st.Prequeue[id] = score
		}
		switch {
		case u.wait == 0:
		case u.exact:
			st.Waiting[id] = u.wait
		case drawn && u.wait < st.Event.OpensAt:
			st.Waiting[id] = score
		default:
			st.Waiting[id] = u.wait
		}
		if u.joinKey != "" {
			st.JoinKeys[id] = u.joinKey
		}
		if u.hold > nowMs {
			st.Holders[id] = u.hold
			for item, end := range u.items {
				if cur, ok := st.Holds[item]; end > nowMs && (!ok || end > cur.ExpiresAt || end == cur.ExpiresAt && id < cur.UserID) {
					st.Holds[item] = Hold{EventID: st.Event.ID, Item: item, UserID: id, ExpiresAt: end}
				}
			}
		}
		for item, at := range u.sold {
			// Two buyers of one item (a sale Redis lost in a failover, sold
			// again): the first recorded sale stands.
			if cur, ok := soldAt[item]; !ok || at < cur || at == cur && id < st.Sold[item] {
				st.Sold[item], soldAt[item] = id, at
			}
		}
		st.turns(id, u)
		if u.served > 0 {
			st.Served[id] = u.served // a call's as an admission's
		}
		if u.admitted > 0 {
			st.AdmittedTotal += u.admitted
			if first || u.topScore > st.AdmittedMaxScore {
				st.AdmittedMaxScore, first = u.topScore, false
			}
		}
	}
	for item := range st.Sold {
		delete(st.Holds, item)
	}
	return st, true
}

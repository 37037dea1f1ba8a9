package queue

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/waitq/waitq/pkg/draw"
)

// Op is what a message asks of the waiting line, or, for a record, what
// the live state did.
type Op string

// The operations a message carries. Joins and leaves are requests: the
// ingest consumer applies them to the live state. The others are records
// (Op.Record): changes the live state made on its own, written to the log
// after they were made so that the state can be rebuilt from the log alone;
// the ingest consumer skips them.
const (
	OpJoin  Op = "join"
	OpLeave Op = "leave"
	// OpAdmit records an admission: the user left the line at Score and
	// holds a slot until ExpiresAt, with the served mark ServedMark.
	OpAdmit Op = "admit"
	// OpRelease records a slot given back before its stay ended: the
	// admission whose served mark is ServedMark (0, in records written before
	// it was named: the user's stay, whichever).
	OpRelease Op = "release"
	// OpExpire records a stay that ended (expired at TS).
	OpExpire Op = "expire"
	// OpSweep records a waiting user removed after the disconnect grace
	// from their place at Score.
	OpSweep Op = "sweep"
	// OpCall records a waiting user called while away (queue.Away): out of
	// the line from their place at Score, their turn waiting for them
	// until ExpiresAt (the claim window), served for the joins stamped up
	// to ServedMark. An admit record ends the call (they came back).
	OpCall Op = "call"
	// OpLapse records a called user's turn that lapsed: the claim window
	// closed before they came back.
	OpLapse Op = "lapse"
	// OpMoved records a user's place moved to another user by a resume
	// link (resume.go): out of the line from their place at Score, or the
	// called turn that left it, served for the joins stamped up to ServedMark;
	// ID is the link's nonce.
	OpMoved Op = "moved"
	// OpMovedIn records the place at Score taken by the user from another
	// by a resume link: waiting at Score (ExpiresAt 0), or a called turn
	// waiting until ExpiresAt, served for the joins stamped up to ServedMark;
	// ID is the link's nonce, which names the move (applied once).
	OpMovedIn Op = "movedin"
	// OpConfig records the event's configuration (Event, with its draw
	// seed in Seed) as an admin create or update left it.
	OpConfig Op = "config"
	// OpHold records Item held for the user until ExpiresAt (the end of
	// their slot then); the hold ends earlier with the slot.
	OpHold Op = "hold"
	// OpUnhold records Item given back by its buyer.
	OpUnhold Op = "unhold"
	// OpSold records Item sold to the user: never held again.
	OpSold Op = "sold"
	// OpUnsold records the sale of Item to the user undone by the shop
	// (DELETE …/holds/{item}/sale): the item is free again.
	OpUnsold Op = "unsold"
	// OpDrawFrozen records a chain draw's entries frozen (Draw: their
	// root, count and the join marks that cut them), OpDrawMade its draw
	// made at TS (Draw: the public value, or missed).
	OpDrawFrozen Op = "drawfrozen"
	OpDrawMade   Op = "drawmade"
)

// Record reports whether op is a record of a change already made (admit,
// release, expire, sweep, call, lapse, moved, movedin, config, hold, unhold,
// sold, unsold, drawfrozen, drawmade) rather than a request (join, leave).
func (op Op) Record() bool {
	switch op {
	case OpAdmit, OpRelease, OpExpire, OpSweep, OpCall, OpLapse, OpMoved, OpMovedIn, OpConfig, OpHold, OpUnhold, OpSold, OpUnsold, OpDrawFrozen, OpDrawMade:
		return true
	}
	return false
}

// Message versions: MessageVersion carries the requests (join, leave),
// RecordVersion the records. A reader older than the records dead-letters
// them, which costs nothing live: they are only read by a rebuild.
const (
	MessageVersion = 1
	RecordVersion  = 2
)

// Message is a join or leave, or a record, as it travels through the
// event's Kafka topic (key = UserID; a config record's key is the event
// id, as a drawfrozen or drawmade record's). TS is the server stamp in unix milliseconds: for a join the score of
// the user's place in line, for a record when the change was made.
type Message struct {
	V       int    `json:"v"`
	Op      Op     `json:"op"`
	EventID string `json:"eventId"`
	UserID  string `json:"userId,omitempty"`
	TS      int64  `json:"ts"`
	ID      string `json:"id,omitempty"`
	// ExpiresAt is the end of an admission's stay (unix ms; admit).
	ExpiresAt int64 `json:"expiresAt,omitempty"`
	// Score is the place the user left: the admitted one (admit) or the
	// swept one (sweep); a stamp, or a drop's negative drawn score.
	Score int64 `json:"score,omitempty"`
	// ServedMark is an admission's served mark (admit): what the served record
	// keeps, the admission's time, or the admitted join's stamp (opensAt - 1
	// for a drawn place) if later. Joins stamped at or before it are not
	// queued again. A release names the admission it ends by the same mark.
	// On the wire joinTs, named for what it held before the mark was the time.
	ServedMark int64 `json:"joinTs,omitempty"`
	// Event is the configuration of a config record, and Seed its draw
	// seed in hex ("": none).
	Event *Event `json:"event,omitempty"`
	Seed  string `json:"seed,omitempty"`
	// SaltKey is a chain draw's secret salt key in hex ("": none).
	SaltKey string `json:"saltKey,omitempty"`
	// Item is the item of a hold, unhold, sold or unsold record.
	Item string `json:"item,omitempty"`
	// JoinKey is a join's join key (Idempotency-Key; visit on the wire):
	// the same on every try of one join, so a retry that lands after that
	// join was admitted queues nobody again ("": none).
	JoinKey string `json:"visit,omitempty"`
	// Draw is a drawfrozen or drawmade record's step (drawchain.go).
	Draw *DrawRecord `json:"draw,omitempty"`
}

// NewMessage returns a message of op by userID in eventID stamped ts (unix
// ms), with a fresh random request id.
func NewMessage(op Op, eventID, userID string, ts int64) Message {
	var id [12]byte
	_, _ = rand.Read(id[:])
	return Message{V: MessageVersion, Op: op, EventID: eventID, UserID: userID, TS: ts, ID: hex.EncodeToString(id[:])}
}

// NewRecord returns a record of op by userID in eventID made at ts (unix
// ms); the caller fills in the op's fields.
func NewRecord(op Op, eventID, userID string, ts int64) Message {
	return Message{V: RecordVersion, Op: op, EventID: eventID, UserID: userID, TS: ts}
}

// NewConfigRecord returns the config record of e as stored, made at ts.
func NewConfigRecord(e Event, ts int64) Message {
	m := NewRecord(OpConfig, e.ID, "", ts)
	if e.Seed != nil {
		m.Seed = e.Seed.Hex()
	}
	if e.SaltKey != nil {
		m.SaltKey = hex.EncodeToString(e.SaltKey[:])
	}
	e.Seed, e.SaltKey, e.Chain = nil, nil, DrawChainState{}
	m.Event = &e
	return m
}

// Validate reports the first way m breaks the contract, or nil.
func (m *Message) Validate() error {
	want := MessageVersion
	if m.Op.Record() {
		want = RecordVersion
	}
	switch {
	case m.Op != OpJoin && m.Op != OpLeave && !m.Op.Record():
		return fmt.Errorf("queue: message op %q is unknown", m.Op)
	case m.V != want:
		return fmt.Errorf("queue: message version %d, want %d for %s", m.V, want, m.Op)
	case !ValidEventID(m.EventID):
		return fmt.Errorf("queue: message event id %q is invalid", m.EventID)
	case m.Op == OpDrawFrozen || m.Op == OpDrawMade:
		return m.validateDraw()
	case m.Op != OpConfig && !ValidUserID(m.UserID):
		return fmt.Errorf("queue: message user id %q is invalid", m.UserID)
	case m.TS <= 0:
		return fmt.Errorf("queue: message stamp %d is not a positive unix ms time", m.TS)
	case m.Op == OpAdmit && (m.ExpiresAt <= 0 || m.ServedMark == 0 || m.Score == 0):
		return fmt.Errorf("queue: admit record of %q lacks expiresAt, joinTs or score", m.UserID)
	case (m.Op == OpHold || m.Op == OpUnhold || m.Op == OpSold || m.Op == OpUnsold) && !ValidItemID(m.Item):
		return fmt.Errorf("queue: %s record of %q has an invalid item %q", m.Op, m.UserID, m.Item)
	case m.Op == OpHold && m.ExpiresAt <= 0:
		return fmt.Errorf("queue: hold record of %q lacks expiresAt", m.UserID)
	case m.JoinKey != "" && (m.Op != OpJoin || !ValidJoinKey(m.JoinKey)):
		return fmt.Errorf("queue: %s of %q has an invalid join key %q", m.Op, m.UserID, m.JoinKey)
	case m.Op == OpSweep && m.Score == 0:
		return fmt.Errorf("queue: sweep record of %q lacks its score", m.UserID)
	case m.Op == OpCall && (m.ExpiresAt <= 0 || m.ServedMark == 0 || m.Score == 0):
		return fmt.Errorf("queue: call record of %q lacks expiresAt, joinTs or score", m.UserID)
	case (m.Op == OpMoved || m.Op == OpMovedIn) && (m.Score == 0 || m.ID == "" || (m.Op == OpMoved || m.ExpiresAt != 0) && m.ServedMark == 0):
		return fmt.Errorf("queue: %s record of %q lacks its score, id or joinTs", m.Op, m.UserID)
	case m.Op == OpConfig:
		return m.validateConfig()
	}
	return nil
}

// validateConfig checks a config record: a valid configuration of its own
// event, and a seed that parses.
func (m *Message) validateConfig() error {
	switch {
	case m.Event == nil:
		return fmt.Errorf("queue: config record of %s has no event", m.EventID)
	case m.Event.ID != m.EventID:
		return fmt.Errorf("queue: config record of %s holds event %q", m.EventID, m.Event.ID)
	case m.UserID != "":
		return fmt.Errorf("queue: config record of %s has a user id", m.EventID)
	}
	if err := m.Event.Validate(); err != nil {
		return fmt.Errorf("queue: config record of %s: %w", m.EventID, err)
	}
	if m.Seed != "" {
		if _, err := draw.ParseSeed(m.Seed); err != nil {
			return fmt.Errorf("queue: config record of %s: %w", m.EventID, err)
		}
	}
	if b, err := hex.DecodeString(m.SaltKey); err != nil || (len(b) != 0 && len(b) != draw.SaltKeySize) {
		return fmt.Errorf("queue: config record of %s: a salt key is 64 hex digits", m.EventID)
	}
	return nil
}

// ConfiguredEvent returns the event of a config record with its seed.
func (m *Message) ConfiguredEvent() Event {
	e := *m.Event
	if m.Seed != "" {
		seed, _ := draw.ParseSeed(m.Seed) // checked by Validate
		e.Seed = &seed
	}
	if b, _ := hex.DecodeString(m.SaltKey); len(b) == draw.SaltKeySize { // checked by Validate
		e.SaltKey = (*[draw.SaltKeySize]byte)(b)
	}
	return e
}

// Encode returns m as JSON (AppendJSON).
func (m *Message) Encode() ([]byte, error) {
	return m.AppendJSON(nil)
}

// DecodeMessage parses and validates one message value. Any error means the
// message can never be applied and belongs in the dead-letter topic.
func DecodeMessage(b []byte) (Message, error) {
	var m Message
	if err := unmarshalMessage(b, &m); err != nil {
		return Message{}, fmt.Errorf("queue: decode message: %w", err)
	}
	if m.Event != nil && m.Event.StaySeconds == 0 {
		// A config record written before staySeconds was named holdSeconds.
		var older struct {
			Event struct {
				HoldSeconds int `json:"holdSeconds"`
			} `json:"event"`
		}
		if json.Unmarshal(b, &older) == nil {
			m.Event.StaySeconds = older.Event.HoldSeconds
		}
	}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

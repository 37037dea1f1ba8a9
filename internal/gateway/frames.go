package gateway

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/waitq/waitq/internal/queue"
)

// UserState is where a user stands, as a status frame says.
type UserState string

// The states of the contract.
const (
	StatePending   UserState = "pending"    // joined, not yet in Redis
	StatePrequeue  UserState = "prequeue"   // in a drop's pre-queue: no place until the draw at the opening
	StateWaiting   UserState = "waiting"    // in line
	StateAdmitted  UserState = "admitted"   // holding a slot
	StateExpired   UserState = "expired"    // the stay ended or was released
	StateNotQueued UserState = "not_queued" // not in line
	// StateCalled: the turn came while the user was away (queue.Away); it
	// waits for them until claimUntil, and a page of theirs that reads it
	// is admitted by the next admission step.
	StateCalled UserState = "called"
	// StateNoShow: a turn that came while the user was away lapsed (they
	// were not back within the claim window); they may join again.
	StateNoShow UserState = "no_show"
	// StateMoved: the user's place moved to another browser or device (a
	// resume link); this page holds no place any more.
	StateMoved UserState = "moved"
	// StateRebuilding: the event's live state is being rebuilt from its
	// log; no place can be told and nobody is admitted until it ends.
	StateRebuilding UserState = "rebuilding"
)

// StatusFrame tells a user where they stand; it is also the body of
// GET /v1/events/{eventId}/status.
type StatusFrame struct {
	Type       string    `json:"type"` // "status"
	EventID    string    `json:"eventId"`
	UserID     string    `json:"userId"`
	State      UserState `json:"state"`
	Position   int64     `json:"position"` // 1-based while waiting, else 0
	Total      int64     `json:"total"`    // users waiting
	ETASeconds *int64    `json:"etaSeconds"`
	// ETAMaxSeconds is the estimate's high end when it is a range (absent:
	// etaSeconds alone); see estimate.
	ETAMaxSeconds *int64 `json:"etaMaxSeconds,omitempty"`
	TS            int64  `json:"ts"`
	// OpensAt (unix ms) and OpensInSeconds tell a user in a drop's
	// pre-queue when the draw and the admissions start; only in state
	// "prequeue", where Total counts the users gathered.
	OpensAt        int64 `json:"opensAt,omitempty"`
	OpensInSeconds int64 `json:"opensInSeconds,omitempty"`
	// DrawnPlace is the 1-based place the draw gave a pre-queue user, from
	// the opening on (Position then counts down from it as the line moves).
	DrawnPlace int64 `json:"drawnPlace,omitempty"`
	// ClaimUntil (unix ms) is, in state "called", the end of the claim
	// window: the turn waits for the user until then.
	ClaimUntil int64 `json:"claimUntil,omitempty"`
}

// AdmittedFrame is sent once when the user gets a slot.
type AdmittedFrame struct {
	Type       string `json:"type"` // "admitted"
	EventID    string `json:"eventId"`
	UserID     string `json:"userId"`
	EntryToken string `json:"entryToken"`
	ExpiresAt  int64  `json:"expiresAt"`
	// RedirectURL is where to send the user now: the event's targetUrl (or
	// the socket's returnTo under its origin) with the token as
	// ?waitq_token=; absent when the event has no targetUrl.
	RedirectURL string `json:"redirectUrl,omitempty"`
}

// ErrorFrame answers a client frame the gateway could not act on.
type ErrorFrame struct {
	Type    string     `json:"type"` // "error"
	Code    queue.Code `json:"code"`
	Message string     `json:"message"`
}

// ClientFrame is what a client may send: {"type":"leave"} or
// {"type":"release"}.
type ClientFrame struct {
	Type string `json:"type"`
}

// Client frame types.
const (
	FrameLeave   = "leave"
	FrameRelease = "release"
)

// appendStatus appends f's JSON to b, exactly as json.Marshal writes it: a
// status round encodes one frame per socket into each write worker's own
// buffer, with no allocation once it has grown. It relies on the event and
// user ids having been validated to characters JSON needs no escape for
// ([A-Za-z0-9._:@-]).
func appendStatus(b []byte, f *StatusFrame) []byte {
	b = append(b, `{"type":"status","eventId":"`...)
	b = append(b, f.EventID...)
	b = append(b, `","userId":"`...)
	b = append(b, f.UserID...)
	b = append(b, `","state":"`...)
	b = append(b, f.State...)
	b = append(b, `","position":`...)
	b = strconv.AppendInt(b, f.Position, 10)
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, f.Total, 10)
	b = append(b, `,"etaSeconds":`...)
	if f.ETASeconds == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *f.ETASeconds, 10)
	}
	if f.ETAMaxSeconds != nil {
		b = append(b, `,"etaMaxSeconds":`...)
		b = strconv.AppendInt(b, *f.ETAMaxSeconds, 10)
	}
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, f.TS, 10)
	for _, o := range [...]struct {
		key string
		v   int64
	}{{`,"opensAt":`, f.OpensAt}, {`,"opensInSeconds":`, f.OpensInSeconds}, {`,"drawnPlace":`, f.DrawnPlace}, {`,"claimUntil":`, f.ClaimUntil}} {
		if o.v != 0 {
			b = append(b, o.key...)
			b = strconv.AppendInt(b, o.v, 10)
		}
	}
	return append(b, '}')
}

// admittedID is the event id of an admitted frame on an SSE stream: the end
// of the hold it admits to. Status frames carry no id, so a stream that
// reconnects sends it back as Last-Event-ID and is not handed that
// admission's token again.
func admittedID(expiresAt int64) string { return "a" + strconv.FormatInt(expiresAt, 10) }

// parseAdmittedID returns the stay end an admitted frame's id names, or 0
// when id is not such an id (a malformed Last-Event-ID is ignored).
func parseAdmittedID(id string) int64 {
	digits, ok := strings.CutPrefix(id, "a")
	n, err := strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil || n <= 0 || admittedID(n) != id {
		return 0
	}
	return n
}

func encode(v any) []byte {
	b, _ := json.Marshal(v) // frames are structs of strings and numbers
	return b
}

// socketView is what one socket knows of its user beyond what Redis says.
type socketView struct {
	admitted bool // an admitted frame was sent
	// admittedAtMs is when (this gateway's clock): a status read begun at
	// or before it may predate the admission, and says nothing of its end.
	admittedAtMs int64
	placed       bool  // the user was seen in line or holding, or left: no longer pending
	joinedAtMs   int64 // the ticket's join stamp; 0 when unknown
}

// placeState maps what Redis says of a user to a state and 1-based position.
// An admitted frame sent on this socket means the turn passed only for a
// read begun after it (nowMs is the read's time): a status round that read
// Redis just before the admission, delivered just after the frame, still
// shows the user in line, and must not tell them "expired" (found by the
// fault campaign: with two write workers the status was even written
// first, and the client read that its turn had passed before it read the
// admission).
// A user not (yet) in Redis is pending only within pendingMs of their join
// and only until they were once seen in line. In a drop's line before the
// opening a user has no position: it is drawn at the opening.
func placeState(p queue.Place, nowMs int64, h socketView, pendingMs int64) (UserState, int64) {
	switch {
	case p.StayUntil > nowMs:
		return StateAdmitted, 0
	case p.Rank == queue.RankRebuilding:
		return StateRebuilding, 0
	case p.Turn > 0 && !(h.admitted && h.admittedAtMs < nowMs):
		return StateCalled, 0
	case p.Turn == queue.TurnLapsed:
		return StateNoShow, 0
	case p.Turn == queue.TurnMoved:
		return StateMoved, 0
	case p.StayUntil >= 0 || h.admitted && h.admittedAtMs < nowMs:
		return StateExpired, 0
	case p.Rank == queue.RankPrequeue:
		return StatePrequeue, 0
	case p.Rank >= 0:
		return StateWaiting, p.Rank + 1
	case !h.placed && h.joinedAtMs > 0 && nowMs-h.joinedAtMs < pendingMs:
		return StatePending, 0
	}
	return StateNotQueued, 0
}

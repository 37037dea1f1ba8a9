package queue

import (
	"errors"
	"fmt"
	"time"
)

// Code is a machine-readable error code of the external contract, written in
// snake_case in every JSON error body.
type Code string

// The error codes of the external contract. Package httpkit maps each to one
// HTTP status, and some to WebSocket close codes, in single tables; docs/api.md
// lists them.
const (
	CodeInvalidEventID    Code = "invalid_event_id"
	CodeInvalidUserID     Code = "invalid_user_id"
	CodeMissingUserID     Code = "missing_user_id"
	CodeEventNotFound     Code = "event_not_found"
	CodeEventClosed       Code = "event_closed"
	CodeEventNotOpen      Code = "event_not_open"
	CodeScheduleLocked    Code = "schedule_locked"
	CodeDrawNotRevealed   Code = "draw_not_revealed"
	CodeNotChainDraw      Code = "not_chain_draw"
	CodePublicValueSet    Code = "public_value_set"
	CodeDrawPublished     Code = "draw_published"
	CodeNotInDraw         Code = "not_in_draw"
	CodeRateLimited       Code = "rate_limited"
	CodeBrokerUnavailable Code = "broker_unavailable"
	CodeStoreUnavailable  Code = "store_unavailable"
	CodeInvalidConfig     Code = "invalid_config"
	CodeInvalidBody       Code = "invalid_body"
	CodeBodyTooLarge      Code = "body_too_large"
	CodeSlotsInUse        Code = "slots_in_use"
	CodeTooManyReporters  Code = "too_many_reporters"
	CodeUnauthorized      Code = "unauthorized"
	CodeAdminDisabled     Code = "admin_disabled"
	CodeForbidden         Code = "forbidden"
	CodeNotFound          Code = "not_found"
	CodeMethodNotAllowed  Code = "method_not_allowed"
	CodeInvalidTicket     Code = "invalid_ticket"
	CodeInvalidItem       Code = "invalid_item"
	CodeItemHeld          Code = "item_held"
	CodeHoldLimit         Code = "hold_limit"
	CodeItemSold          Code = "item_sold"
	CodeNotHolder         Code = "not_holder"
	// Being called (notify.go).
	CodeInvalidEmail Code = "invalid_email"
	CodeEmailLimit   Code = "email_limit"
	// CodeNotAdmitted: an arrival for an admission that is not the user's
	// current one.
	CodeNotAdmitted Code = "not_admitted"
	// Who may join (identity, join tokens, the proof-of-work challenge).
	CodeMissingIdentity   Code = "missing_identity"
	CodeInvalidIdentity   Code = "invalid_identity"
	CodeJoinTokenRequired Code = "join_token_required"
	CodeInvalidJoinToken  Code = "invalid_join_token"
	CodeJoinTokenUsed     Code = "join_token_used"
	CodeChallengeRequired Code = "challenge_required"
	CodeInvalidChallenge  Code = "invalid_challenge"
	CodeChallengeUsed     Code = "challenge_used"
	CodeChallengeTooEasy  Code = "challenge_too_easy"
	// A place to carry to another device (resume links, resume.go) or to be
	// called for (notify.go).
	CodeNoPlace       Code = "no_place"
	CodeInvalidResume Code = "invalid_resume"
	CodeResumeExpired Code = "resume_expired"
	CodeResumeUsed    Code = "resume_used"
	CodePlaceChanged  Code = "place_changed"
	CodeAlreadyQueued Code = "already_queued"
	CodeInternal      Code = "internal"
)

// Error is a domain error: a contract code and a message fit for a person.
type Error struct {
	Code    Code
	Message string
	// OpensAt is the opening of the event a join came too early for (unix
	// ms), told to the client with event_not_open.
	OpensAt int64
	// RetryAfter, when positive, is sent as the Retry-After header.
	RetryAfter time.Duration
}

// Error implements the error interface.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or
// CodeInternal when there is none.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrEventNotFound is returned by stores for an event id that is not
// registered.
var ErrEventNotFound = &Error{Code: CodeEventNotFound, Message: "no such event"}

// ErrNotAdmitted is returned by stores for a person not among an event's
// admissions kept (ReportStore.AdmittedOrder).
var ErrNotAdmitted = &Error{Code: CodeNotAdmitted, Message: "not among the event's latest admissions"}

// ErrStoreUnavailable is the one answer to a client when the live state
// (Redis) did not answer: callers log the underlying error first.
var ErrStoreUnavailable = &Error{Code: CodeStoreUnavailable, Message: "the event store is not reachable; try again"}

// ErrBrokerUnavailable is the answer when no Kafka broker answered.
var ErrBrokerUnavailable = &Error{Code: CodeBrokerUnavailable, Message: "no kafka broker is reachable; try again"}

// ErrRebuilding answers a change asked of an event while its live state is
// rebuilt from the log: nothing changed, and the caller may try again in a
// moment.
var ErrRebuilding = &Error{Code: CodeStoreUnavailable, Message: "the event is being rebuilt from its log; try again in a moment"}

// ErrLogNotDeleted answers a change of an event id that was deleted while
// its log (its topic) could not be: the id is tombstoned until the topic's
// deletion succeeds (an admin DELETE again, or the PUT that creates the id
// anew, retries it), so that no new event starts on the deleted one's log
// and no rebuild brings the deleted one back.
var ErrLogNotDeleted = &Error{Code: CodeBrokerUnavailable, Message: "the event was deleted but its log (topic) is not yet: DELETE the event again once the broker answers"}

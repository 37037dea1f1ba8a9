package entry

// What a Guard decided for a request, and the labels metrics use for it.

import (
	"errors"
)

// Outcome is what a Guard did with one request.
type Outcome int

// The outcomes of a request.
const (
	// Passed: the cookie held a valid token; the request went on.
	Passed Outcome = iota + 1
	// Entered: the waitq_token parameter held a valid token; it was moved
	// into the cookie and a GET or HEAD was redirected to the same URL
	// without the parameter (other methods went on).
	Entered
	// SentToLine: no valid token; a redirect to the waiting room, or 401
	// to a client asking for JSON.
	SentToLine
	// Unavailable: the keys could not be fetched, so no token could be
	// checked; 503.
	Unavailable
)

// String returns the outcome's metric label.
func (o Outcome) String() string {
	switch o {
	case Passed:
		return "passed"
	case Entered:
		return "entered"
	case SentToLine:
		return "to_line"
	case Unavailable:
		return "unavailable"
	}
	return "unknown"
}

// Decision is what a Guard decided for one request, and why.
type Decision struct {
	Outcome Outcome
	// QueryErr and CookieErr are why a token in the waitq_token parameter
	// or in the cookie was refused; nil when there was none or it was
	// valid.
	QueryErr, CookieErr error
	// Legacy reports that the token that passed was of the format before
	// JWTs (e2.…), accepted during the upgrade only (legacy.go).
	Legacy bool
}

// Reason returns the metric label of a refused token's error: malformed,
// unknown_key, signature, expired, other_event, other_issuer,
// not_yet_valid, keys_unavailable, released, or ""
// for nil.
func Reason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrMalformed):
		return "malformed"
	case errors.Is(err, ErrUnknownKey):
		return "unknown_key"
	case errors.Is(err, ErrSignature):
		return "signature"
	case errors.Is(err, ErrExpired):
		return "expired"
	case errors.Is(err, ErrOtherEvent):
		return "other_event"
	case errors.Is(err, ErrOtherIssuer):
		return "other_issuer"
	case errors.Is(err, ErrNotYetValid):
		return "not_yet_valid"
	case errors.Is(err, ErrKeysUnavailable):
		return "keys_unavailable"
	case errors.Is(err, ErrReleased):
		return "released"
	}
	return "other"
}

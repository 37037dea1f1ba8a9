package httpkit

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/queue"
)

// statusOf is the one table from domain codes to HTTP statuses.
var statusOf = map[queue.Code]int{
	queue.CodeInvalidEventID:    http.StatusBadRequest,
	queue.CodeInvalidUserID:     http.StatusBadRequest,
	queue.CodeInvalidConfig:     http.StatusBadRequest,
	queue.CodeInvalidBody:       http.StatusBadRequest,
	queue.CodeInvalidItem:       http.StatusBadRequest,
	queue.CodeNotHolder:         http.StatusForbidden,
	queue.CodeInvalidEmail:      http.StatusBadRequest,
	queue.CodeEmailLimit:        http.StatusConflict,
	queue.CodeNoPlace:           http.StatusConflict,
	queue.CodeItemHeld:          http.StatusConflict,
	queue.CodeHoldLimit:         http.StatusConflict,
	queue.CodeItemSold:          http.StatusConflict,
	queue.CodeNotAdmitted:       http.StatusConflict,
	queue.CodeMissingUserID:     http.StatusUnauthorized,
	queue.CodeUnauthorized:      http.StatusUnauthorized,
	queue.CodeInvalidTicket:     http.StatusUnauthorized,
	queue.CodeMissingIdentity:   http.StatusUnauthorized,
	queue.CodeInvalidIdentity:   http.StatusUnauthorized,
	queue.CodeJoinTokenRequired: http.StatusUnauthorized,
	queue.CodeInvalidJoinToken:  http.StatusUnauthorized,
	queue.CodeJoinTokenUsed:     http.StatusConflict,
	queue.CodeChallengeRequired: http.StatusUnauthorized,
	queue.CodeInvalidChallenge:  http.StatusUnauthorized,
	queue.CodeChallengeUsed:     http.StatusConflict,
	queue.CodeChallengeTooEasy:  http.StatusUnauthorized,
	queue.CodeInvalidResume:     http.StatusBadRequest,
	queue.CodeResumeExpired:     http.StatusGone,
	queue.CodeResumeUsed:        http.StatusConflict,
	queue.CodePlaceChanged:      http.StatusConflict,
	queue.CodeAlreadyQueued:     http.StatusConflict,
	queue.CodeAdminDisabled:     http.StatusForbidden,
	queue.CodeForbidden:         http.StatusForbidden,
	queue.CodeEventNotFound:     http.StatusNotFound,
	queue.CodeNotFound:          http.StatusNotFound,
	queue.CodeMethodNotAllowed:  http.StatusMethodNotAllowed,
	queue.CodeEventClosed:       http.StatusConflict,
	queue.CodeEventNotOpen:      http.StatusConflict,
	queue.CodeScheduleLocked:    http.StatusConflict,
	queue.CodeDrawNotRevealed:   http.StatusConflict,
	queue.CodeNotChainDraw:      http.StatusConflict,
	queue.CodePublicValueSet:    http.StatusConflict,
	queue.CodeDrawPublished:     http.StatusConflict,
	queue.CodeNotInDraw:         http.StatusNotFound,
	queue.CodeSlotsInUse:        http.StatusConflict,
	queue.CodeTooManyReporters:  http.StatusConflict,
	queue.CodeBodyTooLarge:      http.StatusRequestEntityTooLarge,
	queue.CodeRateLimited:       http.StatusTooManyRequests,
	queue.CodeBrokerUnavailable: http.StatusServiceUnavailable,
	queue.CodeStoreUnavailable:  http.StatusServiceUnavailable,
	queue.CodeInternal:          http.StatusInternalServerError,
}

// The close codes of the WebSocket contract.
const (
	CloseInvalidEvent  websocket.StatusCode = 4400                            // invalid event id
	CloseBadIdentity   websocket.StatusCode = 4401                            // missing or bad identity
	CloseUnknownEvent  websocket.StatusCode = 4404                            // no such event
	CloseTooSlow                            = websocket.StatusPolicyViolation // 1008: the client reads too slowly
	CloseTooManyFrames                      = websocket.StatusPolicyViolation // 1008: the client sends too many frames
	CloseShuttingDown                       = websocket.StatusGoingAway       // 1001: the server is shutting down
	CloseInternal                           = websocket.StatusInternalError   // 1011: try again
)

// closeCodeOf is the one table from domain codes to WebSocket close codes,
// for a socket refused or ended for a domain reason, as statusOf is for
// HTTP.
var closeCodeOf = map[queue.Code]websocket.StatusCode{
	queue.CodeInvalidEventID: CloseInvalidEvent,
	queue.CodeInvalidUserID:  CloseBadIdentity,
	queue.CodeMissingUserID:  CloseBadIdentity,
	queue.CodeInvalidTicket:  CloseBadIdentity,
	queue.CodeEventNotFound:  CloseUnknownEvent,
}

// CloseCode returns the WebSocket close code of err: the table's entry for
// its domain code, else 1011 (internal, try again).
func CloseCode(err error) websocket.StatusCode {
	if c, ok := closeCodeOf[queue.ErrorCode(err)]; ok {
		return c
	}
	return CloseInternal
}

// ErrorMessage is the text of a domain error, fit to show a client; other
// errors stay private.
func ErrorMessage(err error) string {
	var e *queue.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// codeOfHTTP names the errors echo raises itself (routing, body limit).
var codeOfHTTP = map[int]queue.Code{
	http.StatusNotFound:              queue.CodeNotFound,
	http.StatusMethodNotAllowed:      queue.CodeMethodNotAllowed,
	http.StatusRequestEntityTooLarge: queue.CodeBodyTooLarge,
	http.StatusBadRequest:            queue.CodeInvalidBody,
	http.StatusUnauthorized:          queue.CodeUnauthorized,
}

// retryAfterSeconds is sent with every 429 and 503.
const retryAfterSeconds = "1"

// ErrorBody is the JSON shape of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the content of ErrorBody.
type ErrorDetail struct {
	Code    queue.Code `json:"code"`
	Message string     `json:"message"`
	// OpensAt is the event's opening (unix ms) with event_not_open.
	OpensAt int64 `json:"opensAt,omitempty"`
}

// errorHandler writes err as the contract's JSON error. Errors without a
// domain code are logged and answered 500 without their text.
func (s *base) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var (
		de *queue.Error
		he *echo.HTTPError
	)
	switch {
	case errors.As(err, &de):
	case errors.As(err, &he):
		code, ok := codeOfHTTP[he.Code]
		if !ok {
			code = queue.CodeInternal
		}
		msg, _ := he.Message.(string)
		if msg == "" {
			msg = http.StatusText(he.Code)
		}
		de = &queue.Error{Code: code, Message: msg}
	default:
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
		de = &queue.Error{Code: queue.CodeInternal, Message: "internal error"}
	}
	status := statusOf[de.Code]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if de.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(de.RetryAfter.Seconds())), 10))
	}
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if c.Response().Header().Get("Retry-After") == "" {
			c.Response().Header().Set("Retry-After", retryAfterSeconds)
		}
	case http.StatusUnauthorized:
		if de.Code == queue.CodeUnauthorized {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="waitq-admin"`)
		}
	}
	s.errors.WithLabelValues(string(de.Code)).Inc()
	if err := c.JSON(status, ErrorBody{Error: ErrorDetail{Code: de.Code, Message: de.Message, OpensAt: de.OpensAt}}); err != nil {
		s.log.Debug("writing error response", "err", err)
	}
}

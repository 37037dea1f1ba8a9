package testclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"

	"github.com/waitq/waitq/internal/challenge"
	"github.com/waitq/waitq/internal/producer"
)

// Visitor is a browser as producer-api sees it: a cookie jar that keeps the
// visitor identity, and the waiting-room page's join, which asks for the
// event's challenge and solves it first. Not safe for concurrent use.
type Visitor struct {
	Base string
	// JoinToken, when set, is sent with every request
	// (X-Waitq-Join-Token).
	JoinToken string
	// HTTP sends the requests; its cookie jar is the visitor's browser.
	HTTP *http.Client
}

// NewVisitor returns a visitor of producer-api at base with an empty cookie
// jar (no identity yet).
func NewVisitor(base string) *Visitor {
	jar, _ := cookiejar.New(nil) // a nil Options cannot fail
	return &Visitor{Base: base, HTTP: &http.Client{Jar: jar, Timeout: client.Timeout}}
}

// Identify asks producer-api for the visitor's identity (POST /v1/visitor):
// the one its cookie carries, or a new one; it returns the visitor id and
// the status (201 new, 200 kept).
func (v *Visitor) Identify(ctx context.Context) (string, int, error) {
	var r producer.VisitorResponse
	status, err := v.do(ctx, http.MethodPost, "/v1/visitor", nil, &r)
	return r.VisitorID, status, err
}

// Challenge asks for event's challenge.
func (v *Visitor) Challenge(ctx context.Context, event string) (producer.ChallengeResponse, error) {
	var r producer.ChallengeResponse
	status, err := v.do(ctx, http.MethodPost, "/v1/events/"+event+"/challenge", nil, &r)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("challenge of %s: %d", event, status)
	}
	return r, err
}

// Join joins event as the page does: the challenge first when the event
// asks for one, solved, then the join with its solution. It returns the 202
// body, or the refusal of the join; err is any other failure.
func (v *Visitor) Join(ctx context.Context, event string) (producer.JoinResponse, *Refusal, error) {
	ch, err := v.Challenge(ctx, event)
	if re, ok := err.(*refused); ok {
		return producer.JoinResponse{}, &re.Refusal, nil
	}
	if err != nil {
		return producer.JoinResponse{}, nil, err
	}
	var body *producer.JoinBody
	if ch.Required {
		sol, err := challenge.Solve(ctx, ch.Challenge, nil)
		if err != nil {
			return producer.JoinResponse{}, nil, err
		}
		body = &producer.JoinBody{Challenge: ch.Challenge, Solution: sol}
	}
	return v.JoinWith(ctx, event, body)
}

// JoinWith sends one join of event with body (nil: none) and returns the
// 202 body or the refusal.
func (v *Visitor) JoinWith(ctx context.Context, event string, body *producer.JoinBody) (producer.JoinResponse, *Refusal, error) {
	var j producer.JoinResponse
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	status, err := v.do(ctx, http.MethodPost, "/v1/events/"+event+"/queue", raw, &j)
	var ref *Refusal
	if re, ok := err.(*refused); ok {
		ref, err = &re.Refusal, nil
	} else if err == nil && status != http.StatusAccepted {
		err = fmt.Errorf("join %s: %d", event, status)
	}
	return j, ref, err
}

// refused is an error answer of producer-api.
type refused struct{ Refusal }

func (r *refused) Error() string { return fmt.Sprintf("%d %s", r.Status, r.Code) }

// do sends a request with the visitor's cookies and join token and decodes
// a 2xx answer into out; an error answer comes back as *refused.
func (v *Visitor) do(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, v.Base+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if v.JoinToken != "" {
		req.Header.Set(producer.JoinTokenHeader, v.JoinToken)
	}
	resp, err := v.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, &refused{*refusalOf(resp, raw)}
	}
	return resp.StatusCode, json.Unmarshal(raw, out)
}

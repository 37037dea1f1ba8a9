package entry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Release gives the slot of token back to the event's line: POST
// <gatewayURL>/v1/events/{eventId}/release {"token":"…"}, as the protected
// service does when the user is done. It reports whether the user still
// held the slot (releasing twice frees one slot).
func Release(ctx context.Context, c *http.Client, gatewayURL, eventID, token string) (bool, error) {
	status, raw, err := postToken(ctx, c, gatewayURL, eventID, "release", "", token)
	if err != nil {
		return false, fmt.Errorf("entry: release in %s: %w", eventID, err)
	}
	if status != http.StatusOK {
		return false, fmt.Errorf("entry: release in %s: %d %s: %s", eventID, status, http.StatusText(status), bytes.TrimSpace(raw))
	}
	var r struct {
		Released bool `json:"released"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return false, fmt.Errorf("entry: release in %s: answer %q: %w", eventID, raw, err)
	}
	return r.Released, nil
}

// Arrive reports the arrival of token's admission at the shop, its
// person's first request with it: POST
// <gatewayURL>/v1/events/{eventId}/arrivals {"token":"…"} with the event's
// report token as the bearer, as Guard does through GuardConfig.Arrive.
// An event with an arrival window frees the slot of an admission not
// arrived within it. It reports false, without an error, when the token's
// admission is not the user's current one (409 not_admitted: released,
// ended, or already freed as a no-show's).
func Arrive(ctx context.Context, c *http.Client, gatewayURL, eventID, reportToken, token string) (bool, error) {
	status, raw, err := postToken(ctx, c, gatewayURL, eventID, "arrivals", reportToken, token)
	switch {
	case err != nil:
		return false, fmt.Errorf("entry: arrival in %s: %w", eventID, err)
	case status == http.StatusConflict && bytes.Contains(raw, []byte(`"not_admitted"`)):
		return false, nil
	case status != http.StatusOK:
		return false, fmt.Errorf("entry: arrival in %s: %d %s: %s", eventID, status, http.StatusText(status), bytes.TrimSpace(raw))
	}
	var r struct {
		Arrived bool `json:"arrived"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return false, fmt.Errorf("entry: arrival in %s: answer %q: %w", eventID, raw, err)
	}
	return r.Arrived, nil
}

// postToken posts {"token":token} to <gatewayURL>/v1/events/{eventId}/<route>,
// with bearer when not empty, and returns the answer's status and body (4
// KiB at most).
func postToken(ctx context.Context, c *http.Client, gatewayURL, eventID, route, bearer, token string) (int, []byte, error) {
	body, _ := json.Marshal(struct {
		Token string `json:"token"`
	}{token}) // a string cannot fail to marshal
	u := strings.TrimRight(gatewayURL, "/") + "/v1/events/" + url.PathEscape(eventID) + "/" + route
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, raw, err
}

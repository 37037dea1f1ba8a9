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
	body, _ := json.Marshal(struct {
		Token string `json:"token"`
	}{token}) // a string cannot fail to marshal
	u := strings.TrimRight(gatewayURL, "/") + "/v1/events/" + url.PathEscape(eventID) + "/release"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("entry: release in %s: %w", eventID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return false, fmt.Errorf("entry: release in %s: %w", eventID, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if err != nil {
		return false, fmt.Errorf("entry: release in %s: %w", eventID, err)
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("entry: release in %s: %s: %s", eventID, resp.Status, bytes.TrimSpace(raw))
	}
	var r struct {
		Released bool `json:"released"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return false, fmt.Errorf("entry: release in %s: answer %q: %w", eventID, raw, err)
	}
	return r.Released, nil
}

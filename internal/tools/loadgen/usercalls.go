package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// servicesClient returns the HTTP client a measurement's users join (and
// release, and read metrics) through: the services on loopback, no proxy,
// 10 s a request, 64 idle connections a host.
func servicesClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}}
}

// answerError is the error of an answer other than the one expected: what
// was asked, the answer's status and the start of its body on one line.
func answerError(what string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return fmt.Errorf("%s: %s: %s", what, resp.Status, report.OneLine(string(b)))
}

// joinAs joins event as user through producer-api.
func joinAs(ctx context.Context, c *http.Client, base, event, user string) (producer.JoinResponse, error) {
	var j producer.JoinResponse
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/events/"+event+"/queue", nil)
	if err != nil {
		return j, err
	}
	req.Header.Set(httpkit.UserHeader, user)
	resp, err := c.Do(req)
	if err != nil {
		return j, fmt.Errorf("join: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return j, answerError("join", resp)
	}
	return j, json.NewDecoder(resp.Body).Decode(&j)
}

// watchUntilAdmitted connects to the gateway at base with statusURL and
// reads frames until the admitted one (its entry token is returned) or
// admitWait passes.
func watchUntilAdmitted(ctx context.Context, base, statusURL string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, admitWait)
	defer cancel()
	f, closeWS, err := awaitAdmitted(ctx, base, statusURL)
	if err == nil {
		closeWS()
	}
	return f.EntryToken, err
}

// awaitAdmitted connects to the gateway at base with statusURL and reads
// frames until the admitted one, which it returns with the function that
// closes the socket normally (the close handshake), or until ctx ends.
func awaitAdmitted(ctx context.Context, base, statusURL string) (gateway.AdmittedFrame, func(), error) {
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+statusURL, nil)
	if err != nil {
		return gateway.AdmittedFrame{}, nil, fmt.Errorf("dial: %w", err)
	}
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			_ = ws.CloseNow()
			return gateway.AdmittedFrame{}, nil, fmt.Errorf("no admitted frame: %w", err)
		}
		var f gateway.AdmittedFrame
		if json.Unmarshal(b, &f) == nil && f.Type == "admitted" {
			return f, func() { _ = ws.Close(websocket.StatusNormalClosure, "") }, nil
		}
	}
}

// releaseSlot gives a held slot back through the gateway at base.
func releaseSlot(ctx context.Context, c *http.Client, base, event, token string) error {
	body, _ := json.Marshal(gateway.TokenBody{Token: token})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/events/"+event+"/release", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var rr gateway.ReleaseResponse
	if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil || !rr.Released {
		return fmt.Errorf("%s: released %v (%v)", resp.Status, rr.Released, err)
	}
	return nil
}

package testws

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/testkit/sse"
)

// DialSSE opens the event stream at url (http://…/v1/events/…/stream?…)
// with hdr and starts reading its events as frames: an event's type must be
// its JSON's type. Anything but a 200 text/event-stream answer is an error
// with the status and body. The stream is closed at cleanup, or by cancel.
func DialSSE(t testing.TB, url string, hdr http.Header) (c *Client, cancel func(), err error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Timeout: 0}).Do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		cancel()
		return nil, nil, fmt.Errorf("stream answered %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	c = newClient(t, nil)
	go func() {
		defer resp.Body.Close()
		r := sse.NewReader(resp.Body, 4096)
		for {
			ev, err := r.Next()
			if err != nil {
				c.Closed <- err
				return
			}
			f := Frame{Raw: append([]byte(nil), ev.Data...), At: time.Now(), ID: ev.ID, Retry: r.Retry()}
			if f.Type = typeOf(f.Raw); f.Type != ev.Type {
				t.Errorf("testws: an event named %q holds a %q frame", ev.Type, f.Type)
			}
			c.deliver(f)
		}
	}()
	t.Cleanup(cancel)
	return c, cancel, nil
}

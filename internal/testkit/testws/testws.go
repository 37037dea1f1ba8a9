// Package testws is a real WebSocket client of ws-gateway for tests, and a
// real SSE client of its stream route (sse.go): it collects the frames it
// reads and waits for the ones a test expects.
package testws

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/testkit/contract"
)

// Frame is one frame read, with its arrival time and type; over SSE also
// its event's id and the stream's retry: (ms).
type Frame struct {
	Raw   []byte
	At    time.Time
	Type  string
	ID    string
	Retry int
}

// Client is a connected WebSocket or SSE client.
type Client struct {
	t      testing.TB
	WS     *websocket.Conn // nil for an SSE stream
	Frames chan Frame
	Closed chan error // the error that ended reading, with the close code
}

func newClient(t testing.TB, ws *websocket.Conn) *Client {
	return &Client{t: t, WS: ws, Frames: make(chan Frame, 1024), Closed: make(chan error, 1)}
}

// typeOf returns the type field of a frame's JSON.
func typeOf(raw []byte) string {
	var h struct{ Type string }
	_ = json.Unmarshal(raw, &h)
	return h.Type
}

// deliver passes on a frame read.
func (c *Client) deliver(f Frame) {
	if err := contract.Gateway(c.t).Frame(f.Raw); err != nil {
		c.t.Errorf("testws: %v", err)
	}
	select {
	case c.Frames <- f:
	default:
		c.t.Errorf("testws: frame buffer full")
	}
}

// Dial connects to url (ws://…) with hdr and starts reading; the socket is
// closed at cleanup.
func Dial(t testing.TB, url string, hdr http.Header) (*Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		return nil, err
	}
	c := newClient(t, ws)
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				c.Closed <- err
				return
			}
			c.deliver(Frame{Raw: b, At: time.Now(), Type: typeOf(b)})
		}
	}()
	t.Cleanup(func() { _ = ws.CloseNow() })
	return c, nil
}

// next waits for a frame of type typ, decodes it into v and returns it.
func (c *Client) next(typ string, v any, within time.Duration, ok func() bool) Frame {
	c.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case f := <-c.Frames:
			if f.Type != typ {
				continue
			}
			if err := json.Unmarshal(f.Raw, v); err != nil {
				c.t.Fatal(err)
			}
			if ok == nil || ok() {
				return f
			}
		case err := <-c.Closed:
			c.t.Fatalf("socket closed while waiting for a %s frame: %v", typ, err)
		case <-deadline:
			c.t.Fatalf("no matching %s frame within %v; last %+v", typ, within, v)
		}
	}
}

// Status waits for a status frame that satisfies ok.
func (c *Client) Status(ok func(gateway.StatusFrame) bool, within time.Duration) gateway.StatusFrame {
	c.t.Helper()
	var f gateway.StatusFrame
	c.next("status", &f, within, func() bool { return ok(f) })
	return f
}

// Admitted waits for the admitted frame.
func (c *Client) Admitted(within time.Duration) gateway.AdmittedFrame {
	c.t.Helper()
	f, _ := c.AdmittedEvent(within)
	return f
}

// AdmittedEvent waits for the admitted frame and returns it with its SSE
// event id.
func (c *Client) AdmittedEvent(within time.Duration) (gateway.AdmittedFrame, string) {
	c.t.Helper()
	var f gateway.AdmittedFrame
	raw := c.next("admitted", &f, within, nil)
	return f, raw.ID
}

// ErrorFrame waits for an error frame.
func (c *Client) ErrorFrame(within time.Duration) gateway.ErrorFrame {
	c.t.Helper()
	var f gateway.ErrorFrame
	c.next("error", &f, within, nil)
	return f
}

// CloseCode waits for the server to close the socket and returns the code
// (-1 when it ended without a close frame).
func (c *Client) CloseCode(within time.Duration) websocket.StatusCode {
	c.t.Helper()
	select {
	case err := <-c.Closed:
		return websocket.CloseStatus(err)
	case <-time.After(within):
		c.t.Fatalf("socket still open after %v", within)
	}
	return -1
}

// Send writes a text frame.
func (c *Client) Send(v string) {
	c.t.Helper()
	if err := c.WS.Write(context.Background(), websocket.MessageText, []byte(v)); err != nil {
		c.t.Fatalf("send %s: %v", v, err)
	}
}

// Waiting is a predicate for "waiting at position with total".
func Waiting(position, total int64) func(gateway.StatusFrame) bool {
	return func(f gateway.StatusFrame) bool {
		return f.State == gateway.StateWaiting && f.Position == position && f.Total == total
	}
}

// InState is a predicate for a state.
func InState(s gateway.UserState) func(gateway.StatusFrame) bool {
	return func(f gateway.StatusFrame) bool { return f.State == s }
}

//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/testkit/sse"
)

// The campaign's clients follow the line over a WebSocket or over the
// gateway's server-sent events (GET /v1/events/{eventId}/stream): both
// carry the same frames, read into the same history.

// statusConn is one open status connection of either transport.
type statusConn interface {
	// Read returns the next frame (its JSON).
	Read(ctx context.Context) ([]byte, error)
	// Release sends the socket's release frame; a stream has no client
	// frames (errNoClientFrames).
	Release(ctx context.Context) error
	// Close ends the connection, normally (a close frame) or not.
	Close(normal bool)
}

var errNoClientFrames = errors.New("a stream carries no client frames")

const (
	transportWS  = "ws"
	transportSSE = "sse"
)

// wsConn is a status socket.
type wsConn struct{ ws *websocket.Conn }

func (w wsConn) Read(ctx context.Context) ([]byte, error) {
	_, b, err := w.ws.Read(ctx)
	return b, err
}

func (w wsConn) Release(ctx context.Context) error {
	return w.ws.Write(ctx, websocket.MessageText, []byte(`{"type":"release"}`))
}

func (w wsConn) Close(normal bool) {
	if normal {
		w.ws.Close(websocket.StatusNormalClosure, "")
		return
	}
	w.ws.CloseNow()
}

// sseConn is an event stream: a reader goroutine hands each event's data
// on, so that Read can give up on a silent stream as a socket's does.
type sseConn struct {
	cancel context.CancelFunc
	frames chan []byte
	done   chan struct{}
	err    error // set before done is closed
	once   sync.Once
}

// sseClient holds each stream on a connection of its own for its life.
var sseClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, ResponseHeaderTimeout: 3 * time.Second}}

// dialSSE opens the event stream of event on the gateway at addr with
// ticket; it answers the refusal's status (0 when no answer came).
func dialSSE(ctx context.Context, addr, event, ticket string) (*sseConn, int, error) {
	sctx, cancel := context.WithCancel(ctx)
	u := "http://" + addr + "/v1/events/" + url.PathEscape(event) + "/stream?ticket=" + url.QueryEscape(ticket)
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, u, nil)
	if err != nil {
		cancel()
		return nil, 0, err
	}
	timer := time.AfterFunc(3*time.Second, cancel) // the dial and the answer's head
	resp, err := sseClient.Do(req)
	timer.Stop()
	if err != nil {
		cancel()
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, resp.StatusCode, fmt.Errorf("stream refused: %s", resp.Status)
	}
	s := &sseConn{cancel: cancel, frames: make(chan []byte, 16), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		r := sse.NewReader(resp.Body, 4096)
		for {
			ev, err := r.Next()
			if err != nil {
				s.err = err
				return
			}
			select {
			case s.frames <- bytes.Clone(ev.Data):
			case <-sctx.Done():
				s.err = sctx.Err()
				return
			}
		}
	}()
	return s, http.StatusOK, nil
}

func (s *sseConn) Read(ctx context.Context) ([]byte, error) {
	select {
	case b := <-s.frames:
		return b, nil
	case <-s.done:
		select { // frames read before the end come first
		case b := <-s.frames:
			return b, nil
		default:
		}
		return nil, s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *sseConn) Release(context.Context) error { return errNoClientFrames }

func (s *sseConn) Close(bool) { s.once.Do(s.cancel) }

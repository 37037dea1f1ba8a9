package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// BenchmarkWritePath measures the gateway's write path per frame: 500 real
// sockets over loopback, each frame queued to every socket and written by
// its writer, the clients reading as fast as they can. It covers what a
// status tick costs beyond encoding: queueing, the write deadline and the
// write itself.
func BenchmarkWritePath(b *testing.B) {
	const sockets = 500
	var (
		mu    sync.Mutex
		conns []*conn
		ready = make(chan struct{}, sockets)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c := newConn(ws, identity{eventID: "bench", userID: "u"}, 64)
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		ready <- struct{}{}
		c.run(context.Background(), nopClient{}, 5*time.Second, time.Hour)
	}))
	defer srv.Close()

	var received atomic.Int64
	clients := make([]*websocket.Conn, sockets)
	for i := range clients {
		ws, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
		if err != nil {
			b.Fatal(err)
		}
		clients[i] = ws
		<-ready
		go func() {
			for {
				if _, _, err := ws.Read(context.Background()); err != nil {
					return
				}
				received.Add(1)
			}
		}()
	}
	defer func() {
		for _, ws := range clients {
			_ = ws.CloseNow()
		}
	}()
	frame := []byte(`{"type":"status","eventId":"bench","userId":"u","state":"waiting","position":12,"total":340,"etaSeconds":30,"ts":1795343280009}`)
	b.ReportAllocs()
	b.ResetTimer()
	sent := int64(0)
	for b.Loop() {
		for _, c := range conns {
			c.send(frame)
		}
		sent += sockets
		for received.Load() < sent {
			time.Sleep(50 * time.Microsecond)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(sent), "ns/frame")
}

type nopClient struct{}

func (nopClient) leave(context.Context, *conn) error   { return nil }
func (nopClient) release(context.Context, *conn) error { return nil }

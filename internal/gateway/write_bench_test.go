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
// sockets over loopback, each frame handed to the write workers for every
// socket and written, the clients reading as fast as they can. It covers
// what a status round costs beyond building the frames: the hand-over, the
// encoding, the write itself.
func BenchmarkWritePath(b *testing.B) {
	const sockets = 500
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := New(Config{}, Deps{})
	if err != nil {
		b.Fatal(err)
	}
	s.writers.run(ctx)
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
		c := s.newConn(identity{eventID: "bench", userID: "u"}, &wsTransport{ws: ws})
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		ready <- struct{}{}
		<-ctx.Done()
	}))
	defer srv.Close()
	defer cancel()

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
	f := StatusFrame{Type: "status", EventID: "bench", UserID: "u", State: StateWaiting, Position: 12, Total: 340, TS: 1795343280009}
	b.ReportAllocs()
	b.ResetTimer()
	sent := int64(0)
	for b.Loop() {
		for _, c := range conns {
			s.writers.status(c, &f)
		}
		sent += sockets
		for received.Load() < sent {
			time.Sleep(50 * time.Microsecond)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(sent), "ns/frame")
}

package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/queue"
)

// BenchmarkStatusFrames10k measures one status round's work in the gateway
// for 10,000 sockets of one event, Redis and the system calls excluded
// (measured by the store's benchmarks and BenchmarkWritePath): the state of
// each user, its frame, the hand-over to a write worker, the encoding.
func BenchmarkStatusFrames10k(b *testing.B) {
	const n = 10_000
	s, err := New(Config{}, Deps{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.writers.run(ctx)
	var written atomic.Int64
	t := &countingTransport{n: &written}
	conns := make([]*conn, n)
	places := make([]queue.Place, n)
	for i := range conns {
		conns[i] = s.newConn(identity{eventID: "sale1", userID: fmt.Sprintf("user%05d", i)}, t)
		places[i] = queue.Place{Rank: int64(i), StayUntil: -1}
	}
	now := time.Now().UnixMilli()
	b.ReportAllocs()
	want := int64(0)
	for b.Loop() {
		for i, c := range conns {
			s.deliver(c, nil, places[i], 0, n, pace{perSecond: 20, limit: -1}, now)
		}
		want += n
		for written.Load() < want {
			time.Sleep(20 * time.Microsecond)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/socket")
}

// countingTransport counts the frames written to it.
type countingTransport struct{ n *atomic.Int64 }

func (t *countingTransport) write(frame) error                  { t.n.Add(1); return nil }
func (t *countingTransport) close(websocket.StatusCode, string) {}
func (t *countingTransport) abort()                             {}
func (t *countingTransport) keepAlive(c *conn, _ time.Duration) { c.pinging.Store(false) }

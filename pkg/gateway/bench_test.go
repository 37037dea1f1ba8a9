package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitq/waitq/pkg/queue"
)

// BenchmarkStatusFrames10k measures one status tick's work in the gateway
// for 10,000 sockets of one event, Redis excluded (measured by the store's
// benchmarks): the state of each user, its frame, its queueing.
func BenchmarkStatusFrames10k(b *testing.B) {
	const n = 10_000
	s := New(Config{}, Deps{})
	conns := make([]*conn, n)
	places := make([]queue.Place, n)
	for i := range conns {
		conns[i] = newConn(nil, identity{eventID: "sale1", userID: fmt.Sprintf("user%05d", i)}, 4)
		places[i] = queue.Place{Rank: int64(i), HoldUntil: -1}
	}
	now := time.Now().UnixMilli()
	b.ReportAllocs()
	for b.Loop() {
		for i, c := range conns {
			s.deliver(c, nil, places[i], n, 20, now)
			<-c.out
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/socket")
}

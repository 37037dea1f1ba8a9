package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/entry"
)

// BenchmarkHolds measures seat holds per second, each a new hold answered
// 201, through one gateway over a real redis-server (HTTP on loopback,
// entry-token verification, hold.lua), with its records written to the
// broker (as the app wires it) and without a recorder, next to the seeds'
// bare guard on the same Redis in the same run: SET item user NX PX, one
// round trip each, and pipelined 100 at a time.
//
//	go test ./internal/gateway -run '^$' -bench BenchmarkHolds -benchtime 3s
func BenchmarkHolds(b *testing.B) {
	const users, perUser = 2000, 100
	sys := testsys.Start(b, testsys.Options{})
	ev := testenv.EventID(b)
	e := sys.CreateEvent(ev, users, 1)
	e.MaxItemsPerUser = perUser
	ctx := context.Background()
	if _, err := sys.Store.PutEvent(ctx, e); err != nil {
		b.Fatal(err)
	}
	rc := sys.Store.Client()
	until := time.Now().Add(time.Hour).UnixMilli()
	keys, err := entry.DerivedKeyring(ticketSecret, nil)
	if err != nil {
		b.Fatal(err)
	}
	tokens := make([]string, users)
	zs := make([]redis.Z, users)
	for i := range users {
		u := fmt.Sprintf("u%05d", i)
		zs[i] = redis.Z{Score: float64(until), Member: u}
		tokens[i] = keys.Sign(entry.Token{EventID: ev, UserID: u, Expires: until, IssuedAt: time.Now().UnixMilli()})
	}
	if err := rc.ZAdd(ctx, redisstore.HoldersKey(ev), zs...).Err(); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64 // every hold of the run takes a new item
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

	through := func(name string, store queue.GatewayStore) {
		b.Run(name, func(b *testing.B) {
			gw, err := gateway.New(gateway.Config{}, gateway.Deps{Store: store, Publisher: sys.Pub, Entry: keys, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(gw)
			defer srv.Close()
			url := srv.URL + "/v1/events/" + ev + "/holds"
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := next.Add(1)
					body := fmt.Sprintf(`{"token":%q,"item":"I%d"}`, tokens[n%users], n)
					resp, err := client.Post(url, "application/json", strings.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated {
						b.Errorf("hold: %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "holds/s")
		})
	}
	through("gateway-recorded", sys.Recorded(redisstore.Options{}, sys.Pub))
	through("gateway", sys.StoreWith(redisstore.Options{}))

	b.Run("setnx", func(b *testing.B) {
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				n := next.Add(1)
				if ok, err := rc.SetNX(ctx, fmt.Sprintf("bench:{%s}:seat:%d", ev, n), "u", time.Minute).Result(); err != nil || !ok {
					b.Errorf("SET NX PX: %v %v", ok, err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "holds/s")
	})
	b.Run("setnx-pipeline100", func(b *testing.B) {
		b.ResetTimer()
		for done := 0; done < b.N; {
			batch := min(100, b.N-done)
			p := rc.Pipeline()
			for range batch {
				p.SetNX(ctx, fmt.Sprintf("bench:{%s}:seat:%d", ev, next.Add(1)), "u", time.Minute)
			}
			if _, err := p.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			done += batch
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "holds/s")
	})
}

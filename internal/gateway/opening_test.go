package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestDropOpeningAdmitsWithoutWaitingForTheTick: with the monitor's tick at
// a minute, a drop's pre-queue is admitted at its opening, not at the next
// tick: the gateway runs an extra tick at the opening it learnt from the
// configurations it reads (a socket's status rounds, or the events it lists
// at start and at each tick). (Issue 7, "a schedule opening".)
func TestDropOpeningAdmitsWithoutWaitingForTheTick(t *testing.T) {
	for _, socket := range []bool{true, false} {
		t.Run(fmt.Sprintf("socket=%v", socket), func(t *testing.T) {
			sys := testsys.Start(t, testsys.Options{})
			ev := testenv.EventID(t)
			opensAt := time.Now().Add(2 * time.Second).UnixMilli()
			sys.CreateDrop(ev, 5, 1, opensAt, 3600)
			sys.StartConsumer(sys.ConsumerConfig())
			// The gateway's store, with the recorder as ws-gateway builds it.
			store := sys.Recorded(redisstore.Options{}, sys.Pub)
			cfg := gateway.Config{StatusInterval: 100 * time.Millisecond, AdmitInterval: time.Minute, DisconnectGrace: time.Hour}
			g := startGatewayOn(t, sys, store, cfg, nil, gateway.DefaultWriteBuffer)

			sys.Join(ev, "alice", time.Now().UnixMilli())
			testenv.Eventually(t, 10*time.Second, func() (bool, string) {
				w := sys.Waiting(ev)
				return len(w) == 1, fmt.Sprintf("waiting %v", w)
			})
			if time.Now().UnixMilli() >= opensAt {
				t.Skip("the join reached the line after the opening (slow machine)")
			}
			if socket {
				alice := g.connect(t, ev, "alice")
				alice.Status(func(f gateway.StatusFrame) bool { return f.State == gateway.StatePrequeue }, 5*time.Second)
				alice.Admitted(time.Until(time.UnixMilli(opensAt)) + 5*time.Second)
			}
			// Well before the tick a minute after the start.
			testenv.Eventually(t, time.Until(time.UnixMilli(opensAt))+5*time.Second, func() (bool, string) {
				n, err := sys.Store.Client().ZCard(context.Background(), redisstore.HoldersKey(ev)).Result()
				return n == 1, fmt.Sprintf("%d hold a slot (%v)", n, err)
			})
		})
	}
}

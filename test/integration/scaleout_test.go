//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testws"
)

// TestTwoGatewaysTwoConsumers runs two consumers and two gateways whose slot
// monitors tick at once against one event. Users join in a stream, watch
// from either gateway, and when admitted release at once, later, or never
// (the hold ends). Both consumers and both gateways run with the fast track
// on (the default): joins and releases admit as well as the monitors.
// Sampled all along, the holders never exceed the capacity;
// at the end every user was admitted exactly once and the line is empty.
func TestTwoGatewaysTwoConsumers(t *testing.T) {
	s := newStack(t)
	_, api := s.Producer()
	s.Ingest("ingest-a")
	s.Ingest("ingest-b")
	gws := []*node{s.Gateway("gateway-a", 100*time.Millisecond), s.Gateway("gateway-b", 100*time.Millisecond)}
	ev := testenv.EventID(t)
	const capacity, users = 5, 120
	api.CreateEvent(t, ev, `{"capacity":`+strconv.Itoa(capacity)+`,"staySeconds":2,"partitions":4}`)

	// Sample the holders as often as Redis answers until the test ends.
	var maxHolders, samples atomic.Int64
	ctx, stop := context.WithCancel(t.Context())
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for ctx.Err() == nil {
			n, err := s.RDB.ZCard(ctx, redisstore.HoldersKey(ev)).Result()
			if err == nil {
				samples.Add(1)
				if n > maxHolders.Load() {
					maxHolders.Store(n)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	})

	var (
		mu       sync.Mutex
		admitted = map[string]int{} // admitted frames per user
		wg       sync.WaitGroup
	)
	for i := range users {
		j := api.MustJoin(t, ev, fmt.Sprintf("u%03d", i))
		gw := gws[i%2]
		c, err := testws.Dial(t, gw.WS(j.StatusURL), nil)
		if err != nil {
			t.Fatalf("dial %s: %v", gw.alias, err)
		}
		wg.Go(func() { watch(t, c, j, &mu, admitted) })
	}
	wg.Wait()
	stop()
	sampler.Wait()

	total, err := s.RDB.HGet(t.Context(), redisstore.StatsKey(ev), "admittedTotal").Int()
	waiting, err2 := s.RDB.ZCard(t.Context(), redisstore.WaitingKey(ev)).Result()
	if err != nil || err2 != nil {
		t.Fatalf("read stats: %v %v", err, err2)
	}
	t.Logf("%d users, capacity %d: %d admitted frames to %d users, admittedTotal %d, max holders %d over %d samples, %d left waiting",
		users, capacity, sum(admitted), len(admitted), total, maxHolders.Load(), samples.Load(), waiting)
	if maxHolders.Load() > capacity {
		t.Errorf("holders reached %d, capacity is %d", maxHolders.Load(), capacity)
	}
	if samples.Load() < 100 {
		t.Errorf("only %d samples of the holders: the capacity check saw too little", samples.Load())
	}
	for u, n := range admitted {
		if n != 1 {
			t.Errorf("%s got %d admitted frames", u, n)
		}
	}
	if len(admitted) != users || total != users || waiting != 0 {
		t.Errorf("admitted %d users, admittedTotal %d, %d still waiting; want %d, %d, 0", len(admitted), total, waiting, users, users)
	}
}

// watch follows one user's socket until the user is admitted, counts the
// admitted frames it gets within a further second, and then releases at once,
// after a while, or never.
func watch(t *testing.T, c *testws.Client, j producer.JoinResponse, mu *sync.Mutex, admitted map[string]int) {
	deadline := time.After(90 * time.Second)
	count := func() {
		mu.Lock()
		admitted[j.UserID]++
		mu.Unlock()
	}
	for {
		select {
		case f := <-c.Frames:
			if f.Type != "admitted" {
				continue
			}
			count()
			switch rand.IntN(3) {
			case 0: // done at once
				c.Send(`{"type":"release"}`)
			case 1: // done after a while
				time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
				c.Send(`{"type":"release"}`)
			} // else the hold runs out
			// A second admitted frame here would be a double admission.
			after := time.After(time.Second)
			for {
				select {
				case f := <-c.Frames:
					if f.Type == "admitted" {
						count()
					}
				case <-after:
					return
				}
			}
		case err := <-c.Closed:
			t.Errorf("%s: socket closed before admission: %v", j.UserID, err)
			return
		case <-deadline:
			t.Errorf("%s: not admitted within 90 s", j.UserID)
			return
		}
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

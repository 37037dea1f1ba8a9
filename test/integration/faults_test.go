//go:build integration

package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testws"
)

// TestConsumerKilledTwice SIGKILLs the ingest-consumer's container twice
// during a stream of joins and starts it again each time: every join
// answered 202 must reach the line with its stamp, none twice.
func TestConsumerKilledTwice(t *testing.T) {
	s := newStack(t)
	_, api := s.Producer()
	consumer := s.Ingest("ingest")
	ev := testenv.EventID(t)
	api.CreateEvent(t, ev, `{"capacity":10,"partitions":4}`)

	const workers, perWorker = 8, 400
	stream := api.StartStream(t, ev, workers, perWorker, 20*time.Millisecond)
	for kill := range 2 {
		// Kill only a consumer that has fetched, that is, one that finished
		// joining the group: kfake starts a member's session timer only once
		// its JoinGroup reply is delivered, so a member killed in mid-join
		// would keep its partitions forever (Apache Kafka times it out).
		testenv.Eventually(t, 60*time.Second, func() (bool, string) {
			n, fetched := stream.Acked.Load(), consumer.Metric("waitq_ingest_fetched_total")
			return n >= int64((kill+1)*workers*perWorker/4) && fetched > 0,
				fmt.Sprintf("%d joins acknowledged, %v fetched by the consumer", n, fetched)
		})
		consumer.Kill()
		at := stream.Acked.Load()
		t.Logf("kill %d after %d acknowledged joins", kill+1, at)
		if at >= workers*perWorker {
			t.Fatalf("kill %d came after the stream ended; the test proves nothing", kill+1)
		}
		time.Sleep(500 * time.Millisecond) // joins pile up in Kafka meanwhile
		consumer.Restart()
	}
	found, lost := stream.WaitForLine(s.RDB, ev, 90*time.Second)
	stream.ExpectRefusals() // a consumer crash must not touch the join path
	if lost != 0 || found != workers*perWorker {
		t.Fatalf("lost %d acknowledged joins (found %d of %d)", lost, found, workers*perWorker)
	}
}

// TestRedisPaused freezes Redis for 10 s during a stream of joins. The
// consumer must report itself unready and retry until Redis thaws, lose
// nothing, and the gateway's sockets must go on getting their status.
func TestRedisPaused(t *testing.T) {
	s := newStack(t)
	_, api := s.Producer()
	consumer := s.Ingest("ingest")
	gw := s.Gateway("gateway", 250*time.Millisecond)
	ev := testenv.EventID(t)
	api.CreateEvent(t, ev, `{"capacity":5,"staySeconds":600,"partitions":4}`)

	// A watcher behind the first five, who will be admitted, sees the
	// line before, during and after the outage.
	var first []producer.JoinResponse
	for i := range 5 {
		first = append(first, api.MustJoin(t, ev, fmt.Sprintf("first-%d", i)))
	}
	// They hold the five slots (the fast track admits them as the consumer
	// writes them) before the watcher joins: their joins travel through
	// four partitions, and a watcher written before one of them would take
	// its slot.
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		n, err := s.RDB.ZCard(t.Context(), redisstore.HoldersKey(ev)).Result()
		return err == nil && n == 5, fmt.Sprintf("%d of 5 holding (%v)", n, err)
	})
	watcher := api.MustJoin(t, ev, "watcher")
	ws, err := testws.Dial(t, gw.WS(watcher.StatusURL), nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.Status(testws.Waiting(1, 1), 20*time.Second)

	const workers, perWorker = 8, 600
	stream := api.StartStream(t, ev, workers, perWorker, 25*time.Millisecond)
	for _, j := range append(first, watcher) {
		stream.Record(j.UserID, j, nil, nil)
	}
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		return stream.Acked.Load() >= 1000, fmt.Sprintf("%d joins acknowledged", stream.Acked.Load())
	})
	s.Redis.Pause()
	pausedAt := time.Now()
	ackedAtPause := stream.Acked.Load()
	unready := false
	for time.Since(pausedAt) < 10*time.Second {
		if !consumer.Ready() {
			unready = true
		}
		time.Sleep(250 * time.Millisecond)
	}
	ackedDuring := stream.Acked.Load() - ackedAtPause
	s.Redis.Unpause()
	thawed := time.Now()
	t.Logf("while Redis was paused: %d joins acknowledged, consumer unready: %v, its Redis retries: %v",
		ackedDuring, unready, consumer.Metric("waitq_ingest_retries_total"))
	if !unready {
		t.Errorf("the consumer never reported itself unready while Redis was paused")
	}
	if r := consumer.Metric("waitq_ingest_retries_total"); r < 1 {
		t.Errorf("the consumer retried no write while Redis was paused (retries %v)", r)
	}
	if stream.Sent.Load() >= workers*perWorker {
		t.Fatalf("the stream ended before Redis thawed; the test proves nothing")
	}

	found, lost := stream.WaitForLine(s.RDB, ev, 90*time.Second)
	if lost != 0 {
		t.Errorf("lost %d acknowledged joins (found %d)", lost, found)
	}
	// Refusals while Redis hangs are allowed (the join reads the event
	// when its cached configuration is stale), but only as 503s a client
	// may retry.
	stream.ExpectRefusals("503 store_unavailable")
	// The gateway recovers: the watcher's socket gets fresh status frames,
	// now with the stream behind it in line.
	f := ws.Status(func(f gateway.StatusFrame) bool {
		return f.TS > thawed.UnixMilli() && f.State == gateway.StateWaiting && f.Position == 1 && f.Total > 1
	}, 20*time.Second)
	t.Logf("after the thaw the watcher sees %+v", f)
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		return consumer.Ready() && gw.Ready(), "consumer or gateway still unready after the thaw"
	})
}

// TestBrokerRestarted restarts the broker during a stream of joins:
// producer-api answers 503 broker_unavailable while it is down, and every
// join it acknowledged, before or after, reaches the line.
func TestBrokerRestarted(t *testing.T) {
	s := newStack(t)
	_, api := s.Producer()
	consumer := s.Ingest("ingest")
	ev := testenv.EventID(t)
	api.CreateEvent(t, ev, `{"capacity":10,"partitions":4}`)

	const workers, perWorker = 8, 600
	stream := api.StartStream(t, ev, workers, perWorker, 25*time.Millisecond)
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		return stream.Acked.Load() >= 1000, fmt.Sprintf("%d joins acknowledged", stream.Acked.Load())
	})
	s.Kafka.Stop()
	stoppedAt := stream.Acked.Load()
	time.Sleep(4 * time.Second) // down for longer than the publish timeout
	refused, _ := stream.Refused()
	t.Logf("while the broker was down: %d acknowledged, refused %v", stream.Acked.Load()-stoppedAt, refused)
	if refused["503 broker_unavailable"] == 0 {
		t.Errorf("no join was refused with 503 broker_unavailable while the broker was down")
	}
	// The refusal says when to come back. Like any join refused 503
	// broker_unavailable, the probe may still land.
	j, r, err := api.Join(t.Context(), ev, "probe")
	stream.Record("probe", j, r, err)
	if err != nil || r == nil || r.Status != 503 || r.RetryAfter == "" {
		t.Errorf("join while the broker is down: %+v %v, want 503 with Retry-After", r, err)
	}
	s.Kafka.Restart()
	restartedAt := stream.Acked.Load()
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		return stream.Acked.Load() > restartedAt+500, fmt.Sprintf("%d joins acknowledged since the restart", stream.Acked.Load()-restartedAt)
	})
	if stream.Acked.Load() >= workers*perWorker {
		t.Fatalf("the stream ended before the broker was back; the test proves nothing")
	}

	found, lost := stream.WaitForLine(s.RDB, ev, 90*time.Second)
	if lost != 0 {
		t.Errorf("lost %d acknowledged joins (found %d)", lost, found)
	}
	stream.ExpectRefusals("503 broker_unavailable")
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		return consumer.Ready(), "consumer unready after the broker came back"
	})
}

// TestGatewayKilled SIGKILLs one of two gateways: its clients reconnect to
// the other with the same tickets and keep their places, and a release
// through the survivor admits the head of the line there.
func TestGatewayKilled(t *testing.T) {
	s := newStack(t)
	_, api := s.Producer()
	s.IngestTickOnly("ingest")
	gwA := s.Gateway("gateway-a", 250*time.Millisecond)
	gwB := s.Gateway("gateway-b", 250*time.Millisecond)
	ev := testenv.EventID(t)
	api.CreateEvent(t, ev, `{"capacity":1,"staySeconds":600,"partitions":2}`)

	joins := make([]producer.JoinResponse, 6)
	for i := range joins {
		joins[i] = api.MustJoin(t, ev, fmt.Sprintf("u%d", i+1))
	}
	clients := make([]*testws.Client, len(joins))
	for i, j := range joins {
		c, err := testws.Dial(t, gwA.WS(j.StatusURL), nil)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}
	holder := clients[0].Admitted(20 * time.Second)
	for i := 1; i < len(joins); i++ {
		clients[i].Status(testws.Waiting(int64(i), 5), 20*time.Second)
	}

	gwA.Kill()
	for i, j := range joins[1:] {
		clients[i+1].CloseCode(10 * time.Second) // the socket is gone
		c, err := testws.Dial(t, gwB.WS(j.StatusURL), nil)
		if err != nil {
			t.Fatalf("reconnect %s to gateway-b: %v", j.UserID, err)
		}
		clients[i+1] = c
		c.Status(testws.Waiting(int64(i+1), 5), 10*time.Second)
	}
	// The protected service gives u1's slot back through the survivor.
	if !release(t, gwB, ev, holder.EntryToken) {
		t.Fatalf("release of u1's slot through gateway-b released nothing")
	}
	clients[1].Admitted(10 * time.Second)
	clients[2].Status(testws.Waiting(1, 4), 10*time.Second)
	if n, err := s.RDB.ZCard(t.Context(), redisstore.HoldersKey(ev)).Result(); err != nil || n != 1 {
		t.Errorf("holders = %d (%v), want 1", n, err)
	}
}

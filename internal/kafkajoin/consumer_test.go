package kafkajoin_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testredis"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// waitLine waits until event's line has exactly want users and returns it.
func waitLine(t *testing.T, sys *testsys.System, event string, want int) []testsys.WaitingUser {
	t.Helper()
	var line []testsys.WaitingUser
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		line = sys.Waiting(event)
		return len(line) == want, fmt.Sprintf("%d users waiting, want %d", len(line), want)
	})
	return line
}

func TestPublishIsAckedWithUserKey(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 3)
	sys.Join(ev, "alice", 1000)

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: sys.BrokerConfig.Brokers, Topic: sys.BrokerConfig.Topic(ev), Partition: partitionOf(t, sys, ev, "alice"), MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := r.ReadMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Key) != "alice" {
		t.Errorf("key = %q, want alice", m.Key)
	}
	want := `{"v":1,"op":"join","eventId":"` + ev + `","userId":"alice","ts":1000,"id":"alice-join"}`
	if string(m.Value) != want {
		t.Errorf("value = %s\nwant    %s", m.Value, want)
	}
}

// TestEventTopicsKeepTheirRecords: an event's topic is created with
// retention.ms=-1, so a rebuild can read its whole log.
func TestEventTopicsKeepTheirRecords(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 3)
	resp, err := (&kafka.Client{Addr: kafka.TCP(sys.BrokerConfig.Brokers...)}).DescribeConfigs(context.Background(), &kafka.DescribeConfigsRequest{
		Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: sys.BrokerConfig.Topic(ev), ConfigNames: []string{"retention.ms", "retention.bytes"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range resp.Resources {
		for _, c := range r.ConfigEntries {
			got[c.ConfigName] = c.ConfigValue
		}
	}
	if got["retention.ms"] != "-1" || got["retention.bytes"] != "-1" {
		t.Fatalf("topic configs %v, want retention.ms and retention.bytes -1", got)
	}
}

// partitionOf returns the partition the publisher chose for user's key.
func partitionOf(t *testing.T, sys *testsys.System, ev, user string) int {
	t.Helper()
	parts, err := (&kafka.Client{Addr: kafka.TCP(sys.BrokerConfig.Brokers...)}).Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{sys.BrokerConfig.Topic(ev)}})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int, len(parts.Topics[0].Partitions))
	for i := range ids {
		ids[i] = i
	}
	return kafka.Murmur2Balancer{}.Balance(kafka.Message{Key: []byte(user)}, ids...)
}

func TestLineFollowsStampOrderAcrossPartitions(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 4)
	// kfake picks each partition's leader at random, all four on one broker
	// about once in 27 runs: spread them, so the consumer fetches from
	// several brokers.
	for p := range int32(4) {
		if err := sys.Kafka.MoveTopicPartition(sys.BrokerConfig.Topic(ev), p, p%3); err != nil {
			t.Fatal(err)
		}
	}
	if leaders := leadersOf(t, sys, ev); len(leaders) < 2 {
		t.Fatalf("the 4 partitions are led by brokers %v: want them spread over the 3 brokers", leaders)
	}
	sys.StartConsumer(sys.ConsumerConfig())

	// Stamps are published in random order over four partitions, with
	// ties, so consumption order differs from stamp order.
	const n = 200
	want := make([]testsys.WaitingUser, n)
	for i := range want {
		want[i] = testsys.WaitingUser{User: fmt.Sprintf("u%03d", i), TS: 1_000_000 + int64(i/3)}
	}
	shuffled := slices.Clone(want)
	rand.Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	publishAll(t, sys, ev, shuffled)

	line := waitLine(t, sys, ev, n)
	slices.SortFunc(want, func(a, b testsys.WaitingUser) int {
		return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.User, b.User))
	})
	if !slices.Equal(line, want) {
		t.Fatalf("line is not in stamp order (ties by user id):\n got %v\nwant %v", line[:10], want[:10])
	}
}

// leadersOf returns the distinct brokers leading ev's partitions.
func leadersOf(t *testing.T, sys *testsys.System, ev string) map[int]bool {
	t.Helper()
	md, err := (&kafka.Client{Addr: kafka.TCP(sys.BrokerConfig.Brokers...)}).Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{sys.BrokerConfig.Topic(ev)}})
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int]bool{}
	for _, p := range md.Topics[0].Partitions {
		leaders[p.Leader.ID] = true
	}
	return leaders
}

func publishAll(t *testing.T, sys *testsys.System, ev string, users []testsys.WaitingUser) {
	t.Helper()
	var wg sync.WaitGroup
	for chunk := range slices.Chunk(users, 25) {
		wg.Go(func() {
			for _, u := range chunk {
				sys.Join(ev, u.User, u.TS)
			}
		})
	}
	wg.Wait()
}

func TestRejoinKeepsFirstPlaceAndLeaveRemoves(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 2)
	sys.StartConsumer(sys.ConsumerConfig())

	sys.Join(ev, "first", 100)
	sys.Join(ev, "second", 200)
	sys.Join(ev, "first", 300) // repeated join: must not move
	// A leave right behind its join, for many users: if a leave could
	// overtake its join, some of them would stay in line.
	for i := range 50 {
		u := "gone" + strconv.Itoa(i)
		sys.Join(ev, u, 150)
		sys.Leave(ev, u, 151)
	}
	sys.Join(ev, "marker", 400) // after all the leaves on its partition or not; waited for below
	line := waitLine(t, sys, ev, 3)
	want := []testsys.WaitingUser{{User: "first", TS: 100}, {User: "second", TS: 200}, {User: "marker", TS: 400}}
	// Give stragglers (joins not yet applied) a chance to show up.
	time.Sleep(300 * time.Millisecond)
	line = sys.Waiting(ev)
	if !slices.Equal(line, want) {
		t.Fatalf("line = %v, want %v", line, want)
	}
}

func TestNewEventTopicIsDiscoveredWhileRunning(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	first := testenv.EventID(t)
	sys.CreateEvent(first, 10, 1)
	c := sys.StartConsumer(sys.ConsumerConfig())
	sys.Join(first, "a", 1)
	waitLine(t, sys, first, 1)

	second := first + "-2"
	sys.CreateEvent(second, 10, 2)
	sys.Join(second, "b", 2)
	line := waitLine(t, sys, second, 1)
	if line[0].User != "b" {
		t.Fatalf("line of new event = %v", line)
	}
	if got := c.Topics(); !slices.Contains(got, sys.BrokerConfig.Topic(second)) {
		t.Fatalf("consumer topics %v lack %s", got, sys.BrokerConfig.Topic(second))
	}
	// The first event still flows after the resubscription.
	sys.Join(first, "c", 3)
	waitLine(t, sys, first, 2)
}

func TestPoisonMessagesGoToDLQAndTheStreamGoesOn(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 1)
	c := sys.StartConsumer(sys.ConsumerConfig())

	ghost := ev + "-deleted"
	poison := []struct{ value, reason string }{
		{`not json`, "invalid_message"},
		{`{"v":1,"op":"join","eventId":"` + ev + `","userId":"bad user!","ts":5,"id":"x"}`, "invalid_message"},
		{`{"v":2,"op":"join","eventId":"` + ev + `","userId":"u","ts":5,"id":"x"}`, "invalid_message"},
		{`{"v":1,"op":"jump","eventId":"` + ev + `","userId":"u","ts":5,"id":"x"}`, "invalid_message"},
		{`{"v":1,"op":"join","eventId":"other","userId":"u","ts":5,"id":"x"}`, "event_mismatch"},
	}
	w := &kafka.Writer{Addr: kafka.TCP(sys.BrokerConfig.Brokers...), RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	ctx := context.Background()
	for _, p := range poison {
		if err := w.WriteMessages(ctx, kafka.Message{Topic: sys.BrokerConfig.Topic(ev), Key: []byte("k"), Value: []byte(p.value)}); err != nil {
			t.Fatal(err)
		}
	}
	// A join for an event whose topic exists but whose configuration is gone.
	if err := sys.Pub.Admin().EnsureTopic(ctx, ghost, 1); err != nil {
		t.Fatal(err)
	}
	sys.Join(ghost, "nobody", 7)
	sys.Join(ev, "good", 9)

	waitLine(t, sys, ev, 1)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		s := c.Stats()
		return s.DeadLettered == int64(len(poison)+1), fmt.Sprintf("stats %+v", s)
	})

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: sys.BrokerConfig.Brokers, Topic: kafkajoin.DefaultDLQTopic, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for i := range len(poison) + 1 {
		m, err := r.ReadMessage(rctx)
		if err != nil {
			t.Fatalf("dead letter %d: %v", i, err)
		}
		h := headers(m)
		if i < len(poison) {
			if string(m.Value) != poison[i].value || !startsWith(h["waitq-reason"], poison[i].reason) ||
				h["waitq-source-topic"] != sys.BrokerConfig.Topic(ev) || h["waitq-source-partition"] != "0" || h["waitq-source-offset"] != strconv.Itoa(i) {
				t.Errorf("dead letter %d = %s %v, want %s with reason %s at offset %d", i, m.Value, h, poison[i].value, poison[i].reason, i)
			}
		} else if !startsWith(h["waitq-reason"], "event_not_found") || h["waitq-source-topic"] != sys.BrokerConfig.Topic(ghost) {
			t.Errorf("dead letter of deleted event = %v", h)
		}
	}
}

func headers(m kafka.Message) map[string]string {
	h := map[string]string{}
	for _, x := range m.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}

func startsWith(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

func TestRedisOutageLosesNothing(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3, Redis: []testredis.Option{testredis.Persistent()}})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 3)
	c := sys.StartConsumer(sys.ConsumerConfig())

	const n = 600
	testenv.Eventually(t, 10*time.Second, func() (bool, string) { return c.Ready(), "consumer never ready" })
	done := make(chan struct{})
	go func() {
		defer close(done)
		joinSequence(sys, ev, n, func(i int) {
			if i == n/3 {
				sys.Redis.Stop()
			}
		})
	}()
	// Redis stays down until the consumer has failed, backed off, retried
	// and reported itself unready; only then does it come back.
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		s := c.Stats()
		return s.Retries >= 3 && !c.Ready() && s.Lag > 0, fmt.Sprintf("stats %+v, ready %v", s, c.Ready())
	})
	sys.Redis.Restart()
	<-done
	checkSequence(t, waitLine(t, sys, ev, n))
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return c.Ready() && c.Stats().Lag == 0, fmt.Sprintf("ready %v, stats %+v", c.Ready(), c.Stats())
	})
}

func TestConsumerHandoverLosesNothing(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 4)
	cfg := sys.ConsumerConfig()
	first := sys.StartConsumer(cfg)

	const n = 800
	joinSequence(sys, ev, n, func(i int) {
		switch i {
		case n / 4:
			sys.StartConsumer(cfg) // two members share the partitions
		case n / 2:
			first.Stop() // the second takes over all partitions
		}
	})
	checkSequence(t, waitLine(t, sys, ev, n))
}

// joinSequence publishes joins of users u0000… with stamps 1000…, calling at
// after each so a test can inject a fault at a given point of the stream.
func joinSequence(sys *testsys.System, ev string, n int, at func(i int)) {
	for i := range n {
		sys.Join(ev, fmt.Sprintf("u%04d", i), int64(1000+i))
		at(i)
	}
}

// checkSequence checks that line holds exactly what joinSequence published,
// in order, with its stamps.
func checkSequence(t *testing.T, line []testsys.WaitingUser) {
	t.Helper()
	for i, u := range line {
		if u.User != fmt.Sprintf("u%04d", i) || u.TS != int64(1000+i) {
			t.Fatalf("line[%d] = %v", i, u)
		}
	}
}

// TestLanesKeepEachPartitionsOrder: with several lanes writing at once,
// each partition's messages are still applied in their order (a user's
// join, leave and join again end with the second join's place) and every
// batch of every lane is committed.
func TestLanesKeepEachPartitionsOrder(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	const partitions, users = 5, 60
	sys.CreateEvent(ev, 10, partitions)
	cfg := sys.ConsumerConfig()
	cfg.Lanes, cfg.MaxBatch = 3, 7
	c := sys.StartConsumer(cfg)
	var wg sync.WaitGroup
	want := make([]testsys.WaitingUser, users)
	for i := range users {
		u := fmt.Sprintf("u%03d", i)
		want[i] = testsys.WaitingUser{User: u, TS: 10_000 + int64(i)}
		wg.Go(func() {
			sys.Join(ev, u, 100+int64(i))
			sys.Leave(ev, u, 5_000+int64(i))
			sys.Join(ev, u, 10_000+int64(i))
		})
	}
	wg.Wait()
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		s := c.Stats()
		return s.Fetched == 3*users && s.Lag == 0, fmt.Sprintf("stats %+v", s)
	})
	if line := sys.Waiting(ev); !slices.Equal(line, want) {
		t.Fatalf("line = %v\nwant %v", line, want)
	}
	if s := c.Stats(); s.Written != 3*users || s.CommitErrors != 0 || s.DeadLettered != 0 {
		t.Errorf("stats: %+v, want every message written and committed", s)
	}
}

func TestGracefulStopCommitsWhatWasWritten(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 2)
	cfg := sys.ConsumerConfig()
	c := sys.StartConsumer(cfg)
	const n = 300
	for i := range n {
		sys.Join(ev, fmt.Sprintf("u%03d", i), int64(i+1))
	}
	waitLine(t, sys, ev, n)
	c.Stop()

	// The group's committed offsets cover every message: a restarted
	// consumer would not read any of them again.
	resp, err := (&kafka.Client{Addr: kafka.TCP(sys.BrokerConfig.Brokers...)}).OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{
		GroupID: kafkajoin.DefaultGroupID,
		Topics:  map[string][]int{sys.BrokerConfig.Topic(ev): {0, 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	for _, p := range resp.Topics[sys.BrokerConfig.Topic(ev)] {
		if p.Error != nil {
			t.Fatalf("partition %d: %v", p.Partition, p.Error)
		}
		committed += p.CommittedOffset
	}
	if committed != n {
		t.Fatalf("committed offsets sum to %d after a graceful stop, want %d", committed, n)
	}
	if s := c.Stats(); s.CommitErrors != 0 || s.Lag != 0 || s.Fetched != n {
		t.Errorf("stats after everything was written: %+v", s)
	}
}

func TestDeletedEventTopicIsDropped(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 1)
	c := sys.StartConsumer(sys.ConsumerConfig())
	sys.Join(ev, "a", 1)
	waitLine(t, sys, ev, 1)

	// Deleting the last event topic leaves the consumer subscribed to none.
	if err := sys.Pub.Admin().DeleteTopic(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return len(c.Topics()) == 0, fmt.Sprintf("still subscribed to %v", c.Topics())
	})
	// A new event is then picked up as usual.
	next := ev + "-next"
	sys.CreateEvent(next, 10, 1)
	sys.Join(next, "b", 2)
	waitLine(t, sys, next, 1)
}

// TestReplayNeverAdmitsTwice: Kafka delivers at least once, so after a
// crash a batch can be applied again. A user admitted and gone (released,
// or the stay ended) between the first delivery and the replay must not
// come back in line for that join; a new join of theirs still queues.
func TestReplayNeverAdmitsTwice(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 2, 2)
	ctx := context.Background()
	first := sys.StartConsumer(sys.ConsumerConfig())
	sys.Join(ev, "released", 100)
	sys.Join(ev, "expired", 200)
	sys.Join(ev, "waiting", 300)
	waitLine(t, sys, ev, 3)
	first.Stop()

	res, err := sys.Store.Tick(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: 1_000, AdmitBatch: 10, SweepLimit: 10})
	if err != nil || !slices.Equal(res[0].Admitted, []string{"released", "expired"}) {
		t.Fatalf("admission: %+v, %v", res, err)
	}
	if ok, _, err := sys.Store.Release(ctx, ev, "released", 2_000); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	// The hold of "expired" ends (60 s) and a tick drops it.
	if _, err := sys.Store.Tick(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: 70_000, AdmitBatch: 0, SweepLimit: 10}); err != nil {
		t.Fatal(err)
	}

	// A consumer of another group is handed the whole log again: the same
	// batch, redelivered.
	cfg := sys.ConsumerConfig()
	cfg.GroupID = "replay-" + ev
	replay := sys.StartConsumer(cfg)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		s := replay.Stats()
		return s.Fetched >= 3 && s.Lag == 0, fmt.Sprintf("replayed %d of 3 (%d behind)", s.Fetched, s.Lag)
	})
	if got, want := replay.Stats().Ignored, int64(3); got != want {
		t.Errorf("replay ignored %d joins, want %d", got, want)
	}
	if line := sys.Waiting(ev); !slices.Equal(line, []testsys.WaitingUser{{User: "waiting", TS: 300}}) {
		t.Fatalf("after the replay the line is %v: a served join came back", line)
	}
	// A genuinely new join (stamped after the release) of a released user
	// queues again.
	sys.Join(ev, "released", 2_500)
	line := waitLine(t, sys, ev, 2)
	if !slices.Equal(line, []testsys.WaitingUser{{User: "waiting", TS: 300}, {User: "released", TS: 2_500}}) {
		t.Fatalf("line after a new join = %v", line)
	}
}

// TestLanesAreBounded: WAITQ_WRITE_LANES is 1–64; 0 takes the default.
func TestLanesAreBounded(t *testing.T) {
	base := kafkajoin.DefaultConsumerConfig()
	for _, lanes := range []int{-1, 65} {
		cfg := base
		cfg.Lanes = lanes
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "WAITQ_WRITE_LANES must be between 1 and 64") {
			t.Errorf("lanes %d: %v, want WAITQ_WRITE_LANES refused", lanes, err)
		}
	}
	for _, lanes := range []int{1, 64} {
		cfg := base
		cfg.Lanes = lanes
		if err := cfg.Validate(); err != nil {
			t.Errorf("lanes %d: %v", lanes, err)
		}
	}
	cfg := base
	cfg.Lanes = 0
	if _, err := kafkajoin.NewConsumer(cfg, nil); err != nil {
		t.Errorf("lanes 0 (the default's): %v", err)
	}
}

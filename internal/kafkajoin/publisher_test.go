package kafkajoin_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// partitionEnd returns the end offset of each of ev's partitions.
func partitionEnds(t *testing.T, sys *testsys.System, ev string, partitions int) []int64 {
	t.Helper()
	reqs := make([]kafka.OffsetRequest, partitions)
	for p := range reqs {
		reqs[p] = kafka.LastOffsetOf(p)
	}
	topic := sys.BrokerConfig.Topic(ev)
	resp, err := (&kafka.Client{Addr: kafka.TCP(sys.BrokerConfig.Brokers...)}).ListOffsets(context.Background(), &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		t.Fatal(err)
	}
	ends := make([]int64, partitions)
	for _, po := range resp.Topics[topic] {
		ends[po.Partition] = po.LastOffset
	}
	return ends
}

// TestConcurrentPublishesAreAllInTheLogInOrder: every acknowledged message
// of many concurrent publishers is in its partition once, each user's in the
// order they were published, on the partition its key names.
func TestConcurrentPublishesAreAllInTheLogInOrder(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	const partitions, users, each = 3, 40, 25
	sys.CreateEvent(ev, 10, partitions)
	pub, err := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: sys.BrokerConfig, BatchSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	var wg sync.WaitGroup
	errs := make(chan error, users)
	for u := range users {
		wg.Go(func() {
			user := "u" + strconv.Itoa(u)
			for i := range each {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := pub.Publish(ctx, queue.Message{V: queue.MessageVersion, Op: queue.OpJoin, EventID: ev, UserID: user, TS: int64(1 + i), ID: user + "-" + strconv.Itoa(i)})
				cancel()
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	ends := partitionEnds(t, sys, ev, partitions)
	var total int64
	next := map[string]int64{}
	for p, end := range ends {
		total += end
		for _, km := range sys.ReadPartition(ev, p, int(end)) {
			m, err := queue.DecodeMessage(km.Value)
			if err != nil {
				t.Fatal(err)
			}
			if string(km.Key) != m.UserID || partitionOf(t, sys, ev, m.UserID) != p {
				t.Fatalf("message of %s with key %q on partition %d", m.UserID, km.Key, p)
			}
			if next[m.UserID]++; m.TS != next[m.UserID] {
				t.Fatalf("user %s: stamp %d at position %d of the log", m.UserID, m.TS, next[m.UserID])
			}
		}
	}
	if total != users*each {
		t.Fatalf("the log holds %d messages, want %d", total, users*each)
	}
}

// TestRecordWritesEveryMessage: one Record of messages of several keys
// (several partitions and batches) is acknowledged once all are written.
func TestRecordWritesEveryMessage(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 3})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 3)
	pub, err := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: sys.BrokerConfig, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	before := partitionEnds(t, sys, ev, 3)
	var msgs []queue.Message
	for i := range 20 {
		msgs = append(msgs, queue.NewRecord(queue.OpSweep, ev, "u"+strconv.Itoa(i), int64(100+i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pub.Record(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	var added int64
	for p, end := range partitionEnds(t, sys, ev, 3) {
		added += end - before[p]
	}
	if added != int64(len(msgs)) {
		t.Fatalf("the log took %d messages, want %d", added, len(msgs))
	}
}

// TestPublishAfterCloseFails: a closed publisher refuses to publish.
func TestPublishAfterCloseFails(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 1)
	pub, err := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: sys.BrokerConfig})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := queue.Message{V: queue.MessageVersion, Op: queue.OpJoin, EventID: ev, UserID: "alice", TS: 1, ID: "a"}
	if err := pub.Publish(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctx, m); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("publish after close: %v, want io.ErrClosedPipe", err)
	}
}

package kafkajoin

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
)

// maxBatchBytes caps the bytes of one produce request per partition
// (kafka.Writer's default BatchBytes); a larger message is refused.
const maxBatchBytes = 1 << 20

// batcher gathers the messages written to each topic partition into
// produce requests and returns to each caller once the request holding its
// messages was acknowledged by all in-sync replicas, as kafka.Writer with
// RequiredAcks = RequireAll does: a partition's batch is sent when it is
// full (batchSize messages or maxBatchBytes) or batchTimeout after its
// first message, and a partition's batches are sent one after another, in
// order. Unlike kafka.Writer it allocates a batch's records as they come
// (kafka.Writer allocates room for batchSize messages per batch), no maps,
// goroutine or timer per write, and a batch whose time is up while the
// partition's previous request is still under way takes messages until it
// is sent (kafka.Writer queues it and opens another: more, smaller
// requests, and nobody's message sent sooner). It is safe for concurrent
// use.
type batcher struct {
	transport    *kafka.Transport
	addr         net.Addr
	produce      *kafka.Client
	timeout      time.Duration
	batchTimeout time.Duration
	batchSize    int

	mu     sync.Mutex
	closed bool
	parts  map[topicPartition]*partitionQueue
	// live counts the writes under way, the batches waiting for their
	// timer and the partitions' senders, so that close waits for all.
	live sync.WaitGroup
}

// record is one message of a batch.
type record struct {
	key, value []byte
}

// batch is the records of one produce request. done is closed once it was
// acknowledged or failed (err).
type batch struct {
	records []record
	bytes   int
	timer   *time.Timer
	// due is set when the timer fired while the partition's sender was
	// busy: the sender takes the batch next, open until then.
	due  bool
	done chan struct{}
	err  error
}

// partitionQueue is the open batch of one partition and the full batches
// waiting for the one sender.
type partitionQueue struct {
	b       *batcher
	key     topicPartition
	mu      sync.Mutex
	open    *batch
	queue   []*batch
	sending bool
}

func newBatcher(addr net.Addr, tr *kafka.Transport, batchTimeout time.Duration, batchSize int, timeout time.Duration) *batcher {
	return &batcher{
		transport: tr, addr: addr, timeout: timeout, batchTimeout: batchTimeout, batchSize: batchSize,
		produce: &kafka.Client{Addr: addr, Transport: tr, Timeout: timeout},
		parts:   map[topicPartition]*partitionQueue{},
	}
}

// message is one message to write: its topic, key and value.
type message struct {
	topic      string
	key, value []byte
}

// write sends msgs and returns once every one was acknowledged, or the
// first error of their batches, or ctx's error when it ends first (the
// messages may still be written then).
func (b *batcher) write(ctx context.Context, msgs []message) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return io.ErrClosedPipe
	}
	b.live.Add(1)
	b.mu.Unlock()
	defer b.live.Done()

	// Every message's partition is known before any is added, so a write
	// that fails here (a topic not yet in the metadata) added nothing.
	var onePart [1]int
	partOf := onePart[:0]
	if len(msgs) > 1 {
		partOf = make([]int, 0, len(msgs))
	}
	var (
		topic string
		parts int
	)
	for _, m := range msgs {
		if size := recordSize(m.key, m.value); size > maxBatchBytes {
			return fmt.Errorf("kafkajoin: a message of %d bytes is larger than a batch (%d)", size, maxBatchBytes)
		}
		if m.topic != topic || parts == 0 {
			n, err := b.partitions(ctx, m.topic)
			if err != nil {
				return err
			}
			topic, parts = m.topic, n
		}
		partOf = append(partOf, murmur2Partition(m.key, parts))
	}
	var oneBatch [1]*batch
	batches := oneBatch[:0]
	for i, m := range msgs {
		bt := b.queueOf(topicPartition{topic: m.topic, partition: partOf[i]}).add(record{key: m.key, value: m.value})
		if len(batches) == 0 || batches[len(batches)-1] != bt {
			batches = append(batches, bt)
		}
	}
	for _, bt := range batches {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-bt.done:
			if bt.err != nil {
				return bt.err
			}
		}
	}
	return nil
}

// partitions returns the number of partitions of topic from the
// transport's metadata cache, as kafka.Writer asks it.
func (b *batcher) partitions(ctx context.Context, topic string) (int, error) {
	r, err := b.transport.RoundTrip(ctx, b.addr, &metadataAPI.Request{TopicNames: []string{topic}})
	if err != nil {
		return 0, err
	}
	for _, t := range r.(*metadataAPI.Response).Topics {
		if t.Name == topic {
			if t.ErrorCode != 0 {
				return 0, kafka.Error(t.ErrorCode)
			}
			if len(t.Partitions) == 0 {
				break
			}
			return len(t.Partitions), nil
		}
	}
	return 0, kafka.UnknownTopicOrPartition
}

// murmur2Partition is kafka.Murmur2Balancer's choice among partitions
// 0..n-1 for key.
func murmur2Partition(key []byte, n int) int {
	return kafka.Murmur2Balancer{}.Balance(kafka.Message{Key: key}, partitionIDs(n)...)
}

// ids holds 0, 1, 2, ...: partitionIDs slices it.
var ids = func() []int {
	s := make([]int, 1024)
	for i := range s {
		s[i] = i
	}
	return s
}()

// partitionIDs returns 0..n-1.
func partitionIDs(n int) []int {
	if n <= len(ids) {
		return ids[:n]
	}
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// recordSize is kafka.Message's size estimate of a record without
// headers.
func recordSize(key, value []byte) int { return 4 + 1 + 1 + 4 + len(key) + 4 + len(value) + 8 + 1 }

// queueOf returns the queue of partition key, made on first use.
func (b *batcher) queueOf(key topicPartition) *partitionQueue {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.parts[key]
	if q == nil {
		q = &partitionQueue{b: b, key: key}
		b.parts[key] = q
	}
	return q
}

// add puts r into the open batch, opening one (with its timer) when none
// is, and closes the batch when it is full. It returns r's batch.
func (q *partitionQueue) add(r record) *batch {
	size := recordSize(r.key, r.value)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.open != nil && q.open.bytes+size > maxBatchBytes {
		q.closeOpen()
	}
	bt := q.open
	if bt == nil {
		bt = &batch{done: make(chan struct{})}
		q.open = bt
		q.b.live.Add(1)
		bt.timer = time.AfterFunc(q.b.batchTimeout, func() { q.expire(bt) })
	}
	bt.records = append(bt.records, r)
	bt.bytes += size
	if len(bt.records) >= q.b.batchSize || bt.bytes >= maxBatchBytes {
		q.closeOpen()
	}
	return bt
}

// closeOpen closes the open batch before its timer, queueing it. q.mu is
// held.
func (q *partitionQueue) closeOpen() {
	bt := q.open
	q.open = nil
	if q.enqueue(bt) {
		q.b.live.Add(1)
		go q.send()
	}
	if bt.timer.Stop() {
		q.b.live.Done() // the timer's
	}
}

// expire is bt's timer: when bt is still open it is due, and sent at once
// when the partition's sender is idle (in this goroutine), or else next.
func (q *partitionQueue) expire(bt *batch) {
	defer q.b.live.Done()
	q.mu.Lock()
	start := false
	if q.open == bt {
		if q.sending {
			bt.due = true
		} else {
			q.open = nil
			start = q.enqueue(bt)
		}
	}
	q.mu.Unlock()
	if start {
		q.b.live.Add(1)
		q.send()
	}
}

// enqueue queues bt for sending and reports whether the caller must start
// the sender. q.mu is held.
func (q *partitionQueue) enqueue(bt *batch) (start bool) {
	q.queue = append(q.queue, bt)
	if q.sending {
		return false
	}
	q.sending = true
	return true
}

// send sends the queued batches, and then the open batch when it is due,
// one after another until none is left.
func (q *partitionQueue) send() {
	defer q.b.live.Done()
	for {
		q.mu.Lock()
		var bt *batch
		switch {
		case len(q.queue) > 0:
			bt = q.queue[0]
			q.queue[0] = nil
			q.queue = q.queue[1:]
		case q.open != nil && q.open.due:
			bt = q.open
			q.open = nil
		default:
			q.sending = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		bt.err = q.b.produceBatch(q.key, bt)
		close(bt.done)
	}
}

// close sends the open batches and waits until every write, batch and
// sender is done; later writes fail with io.ErrClosedPipe.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	parts := make([]*partitionQueue, 0, len(b.parts))
	for _, q := range b.parts {
		parts = append(parts, q)
	}
	b.mu.Unlock()
	for _, q := range parts {
		q.mu.Lock()
		if q.open != nil {
			q.closeOpen()
		}
		q.mu.Unlock()
	}
	b.live.Wait()
}

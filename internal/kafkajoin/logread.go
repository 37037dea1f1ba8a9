package kafkajoin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"

	"github.com/waitq/waitq/internal/queue"
)

// ReadLog reads eventID's whole topic, every partition from its first
// offset to its end as it was when ReadLog asked for it, and calls f with
// each valid message with its offset: one goroutine per partition, each partition's
// messages in log order. Messages appended after the ends were taken are
// not read: the consumer group applies them.
func (a *Admin) ReadLog(ctx context.Context, eventID string, f func(partition int, offset int64, m queue.Message)) (queue.LogStats, error) {
	topic := a.conn.Topic(eventID)
	conn, err := a.conn.dialAny(ctx)
	if err != nil {
		return queue.LogStats{}, fmt.Errorf("kafkajoin: read log of %s: %w", eventID, err)
	}
	parts, err := conn.ReadPartitions(topic)
	_ = conn.Close()
	if err != nil {
		return queue.LogStats{}, fmt.Errorf("kafkajoin: read log of %s: partitions: %w", eventID, err)
	}
	var (
		msgs, invalid atomic.Int64
		mu            sync.Mutex
		ends          = make(map[int]int64, len(parts))
	)
	g, gctx := errgroup.WithContext(ctx)
	for _, p := range parts {
		g.Go(func() error {
			n, bad, end, err := a.readPartition(gctx, eventID, p, f)
			msgs.Add(n)
			invalid.Add(bad)
			mu.Lock()
			ends[p.ID] = end
			mu.Unlock()
			return err
		})
	}
	err = g.Wait()
	return queue.LogStats{Partitions: len(parts), Messages: msgs.Load(), Invalid: invalid.Load(), Ends: ends}, err
}

// readPartition reads one partition from its first offset to its end, and
// returns that end (the offset after the last message read).
func (a *Admin) readPartition(ctx context.Context, eventID string, p kafka.Partition, f func(int, int64, queue.Message)) (n, bad, end int64, err error) {
	conn, err := a.conn.dialer().DialLeader(ctx, "tcp", fmt.Sprintf("%s:%d", p.Leader.Host, p.Leader.Port), p.Topic, p.ID)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("kafkajoin: read %s/%d: %w", p.Topic, p.ID, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	first, last, err := conn.ReadOffsets()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("kafkajoin: read %s/%d: offsets: %w", p.Topic, p.ID, err)
	}
	for off := first; off < last; {
		if _, err := conn.Seek(off, kafka.SeekAbsolute); err != nil {
			return n, bad, 0, fmt.Errorf("kafkajoin: read %s/%d: seek %d: %w", p.Topic, p.ID, off, err)
		}
		batch := conn.ReadBatch(1, 16<<20)
		for off < last {
			km, err := batch.ReadMessage()
			if err != nil {
				break // the batch's end, or its error, which Close returns
			}
			off = km.Offset + 1
			n++
			m, err := queue.DecodeMessage(km.Value)
			if err != nil || m.EventID != eventID {
				bad++
				continue
			}
			f(p.ID, km.Offset, m)
		}
		if err := batch.Close(); err != nil && !errors.Is(err, io.EOF) {
			return n, bad, 0, fmt.Errorf("kafkajoin: read %s/%d at %d: %w", p.Topic, p.ID, off, err)
		}
	}
	return n, bad, last, nil
}

package kafkajoin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
)

// Produce retries of a batch, as kafka.Writer makes them: at most
// produceAttempts tries, the n-th retry after min(n² × retryBackoffMin,
// retryBackoffMax), only for temporary errors.
const (
	produceAttempts = 3
	retryBackoffMin = 100 * time.Millisecond
	retryBackoffMax = time.Second
)

// produceBatch writes bt to key's partition with acks=all, retrying a
// temporary error as kafka.Writer does.
func (b *batcher) produceBatch(key topicPartition, bt *batch) error {
	var err error
	for attempt := range produceAttempts {
		if attempt > 0 {
			time.Sleep(min(time.Duration(attempt*attempt)*retryBackoffMin, retryBackoffMax))
		}
		err = b.produceOnce(key, bt)
		if err == nil || !retryable(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("kafkajoin: write %d messages to %s partition %d: %w", len(bt.records), key.topic, key.partition, err)
	}
	return nil
}

func (b *batcher) produceOnce(key topicPartition, bt *batch) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	res, err := b.produce.Produce(ctx, &kafka.ProduceRequest{
		Topic: key.topic, Partition: key.partition, RequiredAcks: kafka.RequireAll,
		Records: &batchRecords{records: bt.records},
	})
	if res != nil {
		err = res.Error
	}
	return err
}

// retryable reports whether err is temporary or a transient network error,
// kafka.Writer's test for a retry.
func retryable(err error) bool {
	var temp interface{ Temporary() bool }
	if errors.As(err, &temp) && temp.Temporary() {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// batchRecords reads a batch's records for a produce request (a
// kafka.RecordReader), reusing one record and two readers.
type batchRecords struct {
	records    []record
	i          int
	rec        kafka.Record
	key, value bytesReader
}

// ReadRecord implements kafka.RecordReader.
func (r *batchRecords) ReadRecord() (*kafka.Record, error) {
	if r.i >= len(r.records) {
		return nil, io.EOF
	}
	m := r.records[r.i]
	r.i++
	r.rec = kafka.Record{}
	if m.key != nil {
		r.key.reset(m.key)
		r.rec.Key = &r.key
	}
	if m.value != nil {
		r.value.reset(m.value)
		r.rec.Value = &r.value
	}
	return &r.rec, nil
}

// bytesReader is a kafka.Bytes over a byte slice.
type bytesReader struct{ bytes.Reader }

func (r *bytesReader) reset(b []byte) { r.Reset(b) }

// Close implements io.Closer.
func (r *bytesReader) Close() error { return nil }

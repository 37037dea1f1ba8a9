package kafkajoin

import (
	"context"
	"strconv"

	"github.com/segmentio/kafka-go"
)

// deadLetter is a message that can never be applied, with the reason given
// in its dead-letter record.
type deadLetter struct {
	msg    kafka.Message
	reason string
}

// deadLetterAll writes dead to the dead-letter topic, retrying until it
// succeeds; false when ctx ended first.
func (c *Consumer) deadLetterAll(ctx context.Context, dead []deadLetter) bool {
	if len(dead) == 0 {
		return true
	}
	if !c.retry(ctx, "write to dead-letter topic", &c.brokerOK, func(ctx context.Context) error {
		return c.deadLetter(ctx, dead)
	}) {
		return false
	}
	c.deadLettered.Add(int64(len(dead)))
	return true
}

// deadLetter writes one attempt of dead to the dead-letter topic: each
// message's key and value, its reason and its source in headers.
func (c *Consumer) deadLetter(ctx context.Context, dead []deadLetter) error {
	out := make([]kafka.Message, len(dead))
	for i, d := range dead {
		c.log.Warn("dead-lettering message", "topic", d.msg.Topic, "partition", d.msg.Partition, "offset", d.msg.Offset, "reason", d.reason)
		out[i] = kafka.Message{
			Key:   d.msg.Key,
			Value: d.msg.Value,
			Headers: []kafka.Header{
				{Key: "waitq-reason", Value: []byte(d.reason)},
				{Key: "waitq-source-topic", Value: []byte(d.msg.Topic)},
				{Key: "waitq-source-partition", Value: []byte(strconv.Itoa(d.msg.Partition))},
				{Key: "waitq-source-offset", Value: []byte(strconv.FormatInt(d.msg.Offset, 10))},
			},
		}
	}
	return c.dlq.WriteMessages(ctx, out...)
}

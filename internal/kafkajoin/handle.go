package kafkajoin

// Handling a batch, layered as middleware (outermost first): dead-lettering
// (what can never be applied goes to the dead-letter topic, deadletter.go),
// then retry with backoff, then a timeout on each attempt (retry.go). The
// batch is committed only once every message in it is written or
// dead-lettered.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/queue"
)

// handle writes one batch: valid messages to the sink, the rest to the
// dead-letter topic; the caller then commits it. It returns false when ctx
// ended before the batch was written (then nothing of it is to be
// committed).
func (c *Consumer) handle(ctx context.Context, batch []fetchedMessage) bool {
	c.fetched.Add(int64(len(batch)))
	good, dead := c.classify(batch)
	more, ok := c.write(ctx, good)
	if !ok {
		return false
	}
	return c.deadLetterAll(ctx, append(dead, more...))
}

// decoded is a message of a batch that can be applied, with its source.
type decoded struct {
	msg queue.Message
	src kafka.Message
}

// classify sorts a batch into messages the sink can apply and those that can
// never be applied (malformed, or on another event's topic).
func (c *Consumer) classify(batch []fetchedMessage) (good []decoded, dead []deadLetter) {
	good = make([]decoded, 0, len(batch))
	for _, f := range batch {
		switch {
		case f.err != nil:
			dead = append(dead, deadLetter{f.src, "invalid_message: " + f.err.Error()})
		case c.cfg.Topic(f.msg.EventID) != f.src.Topic:
			dead = append(dead, deadLetter{f.src, fmt.Sprintf("event_mismatch: message for event %q on topic %q", f.msg.EventID, f.src.Topic)})
		default:
			good = append(good, decoded{f.msg, f.src})
		}
	}
	return good, dead
}

// write applies good to the sink, retrying until it succeeds; the messages
// of events with no configuration come back to be dead-lettered. The
// messages of an event being rebuilt from its log are held, and offered
// again every second until the rebuild ends: the batch stays uncommitted
// meanwhile. ok is false when ctx ended first.
func (c *Consumer) write(ctx context.Context, good []decoded) (dead []deadLetter, ok bool) {
	for len(good) > 0 {
		msgs := make([]queue.LogMessage, len(good))
		for i, g := range good {
			msgs[i] = queue.LogMessage{Message: g.msg, Partition: g.src.Partition, Offset: g.src.Offset}
		}
		var res queue.IngestResult
		if !c.retry(ctx, "write to store", &c.storeOK, func(ctx context.Context) (err error) {
			res, err = c.sink.IngestLog(ctx, msgs, time.Now().UnixMilli())
			return err
		}) {
			return nil, false
		}
		var held []decoded
		for _, g := range good {
			switch {
			case slices.Contains(res.UnknownEvents, g.msg.EventID):
				dead = append(dead, deadLetter{g.src, "event_not_found: event " + g.msg.EventID + " has no configuration"})
			case slices.Contains(res.Rebuilding, g.msg.EventID):
				held = append(held, g)
			}
		}
		c.written.Add(int64(res.Joined + res.Left))
		c.ignored.Add(int64(res.Ignored))
		c.admitted.Add(int64(res.Admitted))
		c.inversions.Add(int64(res.Inversions))
		c.holdsExpired.Add(int64(res.HoldsExpired))
		if len(held) > 0 {
			c.log.Info("events being rebuilt from their log; holding their messages", "events", res.Rebuilding, "messages", len(held))
			if !clock.Sleep(ctx, min(c.cfg.RetryMax, time.Second)) {
				return nil, false
			}
		}
		good = held
	}
	return dead, true
}

// commit commits a batch whose every message is applied or dead-lettered,
// even when Run is ending. A failed commit only means redelivery, which the
// sink tolerates.
func (c *Consumer) commit(ctx context.Context, r *kafka.Reader, batch []kafka.Message) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.CommitMessages(cctx, batch...); err != nil {
		c.commitErrors.Add(1)
		c.log.Warn("commit failed; the batch will be redelivered", "messages", len(batch), "err", err)
		return
	}
	c.commits.Add(1)
	c.noteCommitted(batch)
}

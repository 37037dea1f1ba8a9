package kafkajoin

// Topic discovery: the consumer subscribes to every topic with the join
// prefix, and a change in that set ends the group generation.

import (
	"context"
	"slices"
	"time"
)

// Topics returns the topics subscribed now.
func (c *Consumer) Topics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.topics)
}

// setTopics records the topics of a new generation (nil: none) and forgets
// the partitions of the last one.
func (c *Consumer) setTopics(topics []string) {
	c.mu.Lock()
	c.topics = topics
	clear(c.parts) // partitions may move to other members
	c.mu.Unlock()
}

// discover returns the join topics; ok is false when the broker did not
// answer.
func (c *Consumer) discover(ctx context.Context) (topics []string, ok bool) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	topics, err := c.admin.JoinTopics(dctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("topic discovery failed", "err", err)
		}
		c.brokerOK.Store(false)
		return nil, false
	}
	c.brokerOK.Store(true)
	return topics, true
}

// watchTopics asks the broker for the join topics every DiscoveryInterval
// until they differ from topics (it returns them, changed) or ctx ends. A
// new or deleted event topic ends the generation: kafka-go's group reader
// takes a fixed topic list, and a listed topic that does not exist would
// stall the whole group. An empty set sends Run back to waiting for topics.
func (c *Consumer) watchTopics(ctx context.Context, topics []string) (found []string, changed bool) {
	t := time.NewTicker(c.cfg.DiscoveryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, false
		case <-t.C:
		}
		if found, ok := c.discover(ctx); ok && !slices.Equal(found, topics) {
			c.log.Info("join topics changed", "topics", found)
			return found, true
		}
	}
}

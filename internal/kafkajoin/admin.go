package kafkajoin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/internal/queue"
)

// Admin creates, deletes and lists the event topics.
type Admin struct {
	conn   BrokerConfig
	client *kafka.Client
}

var (
	_ queue.Topics    = (*Admin)(nil)
	_ queue.LogReader = (*Admin)(nil)
)

// EnsureTopic creates eventID's topic with the given partitions, keeping its
// records for ever (retention.ms=-1, retention.bytes=-1): the log is the
// source of truth a rebuild reads, for the life of the event (the admin
// DELETE removes the topic). An existing topic is left as it is.
func (a *Admin) EnsureTopic(ctx context.Context, eventID string, partitions int) error {
	return a.ensure(ctx, a.conn.Topic(eventID), partitions,
		kafka.ConfigEntry{ConfigName: "retention.ms", ConfigValue: "-1"},
		kafka.ConfigEntry{ConfigName: "retention.bytes", ConfigValue: "-1"})
}

func (a *Admin) ensure(ctx context.Context, topic string, partitions int, configs ...kafka.ConfigEntry) error {
	resp, err := a.client.CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: -1, ConfigEntries: configs}},
	})
	if err == nil {
		err = resp.Errors[topic]
	}
	if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return fmt.Errorf("kafkajoin: create topic %s: %w", topic, err)
	}
	return nil
}

// DeleteTopic removes eventID's topic; a missing topic is no error.
func (a *Admin) DeleteTopic(ctx context.Context, eventID string) error {
	topic := a.conn.Topic(eventID)
	resp, err := a.client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err == nil {
		err = resp.Errors[topic]
	}
	if err != nil && !errors.Is(err, kafka.UnknownTopicOrPartition) {
		return fmt.Errorf("kafkajoin: delete topic %s: %w", topic, err)
	}
	return nil
}

// JoinTopics lists, sorted, the existing topics with the join prefix. It asks a
// broker directly rather than a metadata cache.
func (a *Admin) JoinTopics(ctx context.Context) ([]string, error) {
	conn, err := a.conn.dialAny(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafkajoin: list topics: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	parts, err := conn.ReadPartitions()
	if err != nil {
		return nil, fmt.Errorf("kafkajoin: list topics: %w", err)
	}
	var topics []string
	for _, p := range parts {
		if strings.HasPrefix(p.Topic, a.conn.TopicPrefix) && p.Error == nil {
			topics = append(topics, p.Topic)
		}
	}
	slices.Sort(topics)
	return slices.Compact(topics), nil
}

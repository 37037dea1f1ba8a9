package kafkajoin

import (
	"context"
	"net"
	"time"

	"github.com/segmentio/kafka-go"
)

// Defaults of the external contract.
const (
	// DefaultBrokers are the bootstrap brokers when none are configured.
	DefaultBrokers     = "127.0.0.1:9092"
	DefaultTopicPrefix = "waitq.join."
	DefaultGroupID     = "waitq-ingest"
	DefaultDLQTopic    = "waitq.dlq"
	// DefaultBatchTimeout is the writer's batch timeout: measured best on
	// the join path (cmd/loadgen; 250µs costs more in requests than it
	// saves in waiting, 2 ms and up adds the wait to every join).
	DefaultBatchTimeout = time.Millisecond
)

// BrokerConfig says how to reach the brokers and how topics are named. It is
// shared by every client here.
type BrokerConfig struct {
	// Brokers are the bootstrap addresses (host:port).
	Brokers []string
	// TopicPrefix is prepended to an event id to name its topic.
	TopicPrefix string
	// Dial, when set, opens every broker connection (tests use it to reach
	// a broker that advertises an address the test process cannot resolve).
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// MetadataTTL bounds how long a cached topic list is trusted; a join for
	// an event created through another replica waits at most this long.
	MetadataTTL time.Duration
}

// Topic returns the topic of eventID.
func (c *BrokerConfig) Topic(eventID string) string { return c.prefix() + eventID }

func (c *BrokerConfig) prefix() string {
	if c.TopicPrefix == "" {
		return DefaultTopicPrefix
	}
	return c.TopicPrefix
}

func (c *BrokerConfig) transport() *kafka.Transport {
	ttl := c.MetadataTTL
	if ttl <= 0 {
		ttl = time.Second
	}
	return &kafka.Transport{Dial: c.Dial, MetadataTTL: ttl, ClientID: "waitq"}
}

func (c *BrokerConfig) dialer() *kafka.Dialer {
	return &kafka.Dialer{DialFunc: c.Dial, Timeout: 5 * time.Second, DualStack: true, ClientID: "waitq"}
}

// dialAny opens a connection to the first broker that answers.
func (c *BrokerConfig) dialAny(ctx context.Context) (*kafka.Conn, error) {
	var last error
	for _, b := range c.Brokers {
		conn, err := c.dialer().DialContext(ctx, "tcp", b)
		if err == nil {
			return conn, nil
		}
		last = err
	}
	return nil, last
}

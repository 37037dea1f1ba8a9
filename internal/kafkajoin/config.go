package kafkajoin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/internal/queue"
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
// shared by every client here. Zero values take DefaultBrokerConfig's when a
// client is made.
type BrokerConfig struct {
	// Brokers are the bootstrap addresses (host:port), WAITQ_KAFKA_BROKERS.
	Brokers []string
	// TopicPrefix is prepended to an event id to name its topic,
	// WAITQ_TOPIC_PREFIX.
	TopicPrefix string
	// Dial, when set, opens every broker connection (tests use it to reach
	// a broker that advertises an address the test process cannot resolve).
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// MetadataTTL bounds how long a cached topic list is trusted; a join for
	// an event created through another replica waits at most this long.
	MetadataTTL time.Duration
}

// DefaultBrokerConfig returns the defaults of every broker setting.
func DefaultBrokerConfig() BrokerConfig {
	return BrokerConfig{Brokers: []string{DefaultBrokers}, TopicPrefix: DefaultTopicPrefix, MetadataTTL: time.Second}
}

// withDefaults fills the zero settings of c from DefaultBrokerConfig; an
// empty broker list stays empty (Validate refuses it).
func (c BrokerConfig) withDefaults() BrokerConfig {
	d := DefaultBrokerConfig()
	c.TopicPrefix = cmp.Or(c.TopicPrefix, d.TopicPrefix)
	c.MetadataTTL = cmp.Or(c.MetadataTTL, d.MetadataTTL)
	return c
}

// Validate reports every setting of c that cannot work, each named by its
// WAITQ_ variable.
func (c BrokerConfig) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("WAITQ_KAFKA_BROKERS names no broker"))
	}
	if c.TopicPrefix == "" || strings.ContainsAny(c.TopicPrefix, " /\\") {
		errs = append(errs, fmt.Errorf("WAITQ_TOPIC_PREFIX=%q is not a usable topic prefix", c.TopicPrefix))
	}
	if c.MetadataTTL < 0 {
		errs = append(errs, fmt.Errorf("kafkajoin: metadata TTL %s must not be negative", c.MetadataTTL))
	}
	return errors.Join(errs...)
}

// Topic returns the topic of eventID.
func (c *BrokerConfig) Topic(eventID string) string { return c.TopicPrefix + eventID }

func (c *BrokerConfig) transport() *kafka.Transport {
	return &kafka.Transport{Dial: c.Dial, MetadataTTL: c.MetadataTTL, ClientID: "waitq"}
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

// PublisherConfig tunes the writer. Zero values take DefaultPublisherConfig's.
type PublisherConfig struct {
	BrokerConfig
	// BatchTimeout is the longest a message waits for others to share its
	// produce request (DefaultBatchTimeout), WAITQ_KAFKA_BATCH_TIMEOUT.
	// kafka-go's default (1 s) would add a second to every join.
	BatchTimeout time.Duration
	// BatchSize caps the messages of one produce request per partition.
	BatchSize int
	// Timeout bounds one produce request's I/O
	// (queue.DefaultPublishTimeout), so a hung broker cannot hold a batch,
	// or Close, for long; producer-api's WAITQ_PUBLISH_TIMEOUT.
	Timeout time.Duration
}

// DefaultPublisherConfig returns the defaults of every publisher setting.
func DefaultPublisherConfig() PublisherConfig {
	return PublisherConfig{
		BrokerConfig: DefaultBrokerConfig(),
		BatchTimeout: DefaultBatchTimeout,
		BatchSize:    1000,
		Timeout:      queue.DefaultPublishTimeout,
	}
}

// withDefaults fills the zero settings of c from DefaultPublisherConfig.
func (c PublisherConfig) withDefaults() PublisherConfig {
	d := DefaultPublisherConfig()
	c.BrokerConfig = c.BrokerConfig.withDefaults()
	c.BatchTimeout = cmp.Or(c.BatchTimeout, d.BatchTimeout)
	c.BatchSize = cmp.Or(c.BatchSize, d.BatchSize)
	c.Timeout = cmp.Or(c.Timeout, d.Timeout)
	return c
}

// Validate reports every setting of c that cannot work.
func (c PublisherConfig) Validate() error {
	var errs []error
	if c.BatchTimeout <= 0 || c.Timeout <= 0 {
		errs = append(errs, errors.New("WAITQ_KAFKA_BATCH_TIMEOUT and WAITQ_PUBLISH_TIMEOUT must be positive"))
	}
	if c.BatchTimeout >= c.Timeout {
		errs = append(errs, errors.New("WAITQ_KAFKA_BATCH_TIMEOUT must be shorter than WAITQ_PUBLISH_TIMEOUT"))
	}
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("kafkajoin: batch size %d must be at least 1", c.BatchSize))
	}
	return errors.Join(append(errs, c.BrokerConfig.Validate())...)
}

// ConsumerConfig tunes a Consumer. Zero values take DefaultConsumerConfig's.
type ConsumerConfig struct {
	BrokerConfig
	// GroupID is the consumer group, WAITQ_GROUP_ID.
	GroupID string
	// DLQTopic is the dead-letter topic, WAITQ_DLQ_TOPIC.
	DLQTopic string
	// DiscoveryInterval is how often the broker is asked for new event
	// topics, WAITQ_DISCOVERY_INTERVAL.
	DiscoveryInterval time.Duration
	// SessionTimeout is how long the group waits for a silent member before
	// moving its partitions to others, WAITQ_KAFKA_SESSION_TIMEOUT.
	SessionTimeout time.Duration
	// MaxBatch caps the messages written to the sink in one call,
	// WAITQ_MAX_BATCH.
	MaxBatch int
	// Lanes is how many batches a member writes at once, each of its own
	// partitions (dealt to the lanes as first fetched), so that one
	// partition's batches are still written one after another, in order,
	// WAITQ_WRITE_LANES.
	Lanes int
	// RetryMin and RetryMax bound the backoff between attempts of a failed
	// write. Attempts go on until they succeed or Run ends. A RetryMax
	// below RetryMin takes the default's, or RetryMin when that is longer.
	RetryMin, RetryMax time.Duration
	// AttemptTimeout bounds one attempt of a write: a server that hangs
	// counts as failed, so it is retried and reported unready.
	AttemptTimeout time.Duration
	// Logger receives the consumer's logs (nil: discarded).
	Logger *slog.Logger
}

// DefaultConsumerConfig returns the defaults of every setting: the values
// ingest-consumer runs with when nothing is configured.
func DefaultConsumerConfig() ConsumerConfig {
	return ConsumerConfig{
		BrokerConfig:      DefaultBrokerConfig(),
		GroupID:           DefaultGroupID,
		DLQTopic:          DefaultDLQTopic,
		DiscoveryInterval: 2 * time.Second,
		SessionTimeout:    10 * time.Second,
		MaxBatch:          500,
		Lanes:             2,
		RetryMin:          50 * time.Millisecond,
		RetryMax:          5 * time.Second,
		AttemptTimeout:    5 * time.Second,
	}
}

// withDefaults fills the zero settings of c from DefaultConsumerConfig.
func (c ConsumerConfig) withDefaults() ConsumerConfig {
	d := DefaultConsumerConfig()
	c.BrokerConfig = c.BrokerConfig.withDefaults()
	c.GroupID = cmp.Or(c.GroupID, d.GroupID)
	c.DLQTopic = cmp.Or(c.DLQTopic, d.DLQTopic)
	c.DiscoveryInterval = cmp.Or(c.DiscoveryInterval, d.DiscoveryInterval)
	c.SessionTimeout = cmp.Or(c.SessionTimeout, d.SessionTimeout)
	c.MaxBatch = cmp.Or(c.MaxBatch, d.MaxBatch)
	c.Lanes = cmp.Or(c.Lanes, d.Lanes)
	c.RetryMin = cmp.Or(c.RetryMin, d.RetryMin)
	if c.RetryMax < c.RetryMin {
		c.RetryMax = max(d.RetryMax, c.RetryMin)
	}
	c.AttemptTimeout = cmp.Or(c.AttemptTimeout, d.AttemptTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every setting of c that cannot work, each named by its
// WAITQ_ variable where ingest-consumer has one.
func (c ConsumerConfig) Validate() error {
	var errs []error
	if c.DiscoveryInterval <= 0 || c.SessionTimeout <= 0 {
		errs = append(errs, errors.New("WAITQ_DISCOVERY_INTERVAL and WAITQ_KAFKA_SESSION_TIMEOUT must be positive"))
	}
	if c.MaxBatch < 1 || c.MaxBatch > 100_000 {
		errs = append(errs, errors.New("WAITQ_MAX_BATCH must be between 1 and 100000"))
	}
	if c.Lanes < 1 || c.Lanes > 64 {
		errs = append(errs, errors.New("WAITQ_WRITE_LANES must be between 1 and 64"))
	}
	if c.RetryMin <= 0 || c.AttemptTimeout <= 0 {
		errs = append(errs, fmt.Errorf("kafkajoin: retry backoff %s and attempt timeout %s must be positive", c.RetryMin, c.AttemptTimeout))
	}
	return errors.Join(append(errs, c.BrokerConfig.Validate())...)
}

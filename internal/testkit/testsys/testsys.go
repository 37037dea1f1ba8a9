// Package testsys assembles the real parts of the join path for tests: an
// in-process kfake broker, a redis-server, the store, a publisher and
// consumers, with short intervals so faults heal quickly.
package testsys

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testkafka"
	"github.com/waitq/waitq/internal/testkit/testredis"
	"github.com/waitq/waitq/pkg/draw"
)

// System is a broker, a Redis and the clients of both.
type System struct {
	tb           testing.TB
	Kafka        *kfake.Cluster
	Redis        *testredis.Server
	Store        *redisstore.Store
	BrokerConfig kafkajoin.BrokerConfig
	Pub          *kafkajoin.Publisher
}

// Options select the parts' settings.
type Options struct {
	Redis []testredis.Option
	Kafka []kfake.Opt
	// Brokers is the number of kfake brokers (0: one).
	Brokers int
}

// Start starts a System for tb; everything stops at cleanup.
func Start(tb testing.TB, o Options) *System {
	tb.Helper()
	s := &System{tb: tb, Redis: testredis.Start(tb, o.Redis...)}
	s.Kafka = testkafka.StartBrokers(tb, max(o.Brokers, 1), o.Kafka...)
	s.BrokerConfig = kafkajoin.BrokerConfig{Brokers: s.Kafka.ListenAddrs(), TopicPrefix: kafkajoin.DefaultTopicPrefix, MetadataTTL: 200 * time.Millisecond}
	store, err := redisstore.Dial(context.Background(), s.Redis.URL())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = store.Close() })
	s.Store = store
	pub, err := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: s.BrokerConfig, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	s.Pub = pub
	tb.Cleanup(func() { _ = s.Pub.Close() })
	return s
}

// StoreWith returns a Store with o on the System's Redis client (such as
// the fast track on); closing the System's Store closes it.
func (s *System) StoreWith(o redisstore.Options) *redisstore.Store {
	s.tb.Helper()
	store, err := redisstore.New(s.Store.Client(), o)
	if err != nil {
		s.tb.Fatal(err)
	}
	return store
}

// Recorded returns a Store with o on the System's Redis client whose
// changes are recorded through rec (the System's publisher, or a wrapper
// of it), failures logged to the test.
func (s *System) Recorded(o redisstore.Options, rec queue.Recorder) *recording.Store {
	s.tb.Helper()
	return recording.New(s.StoreWith(o), rec, testenv.Logger(s.tb))
}

// CreateEvent registers an open event with the given capacity and creates its
// topic, as the admin API does.
func (s *System) CreateEvent(id string, capacity, partitions int) queue.Event {
	s.tb.Helper()
	return s.createEvent(queue.Event{ID: id, Capacity: capacity, StaySeconds: 60, State: queue.StateOpen, Partitions: partitions})
}

// CreateDrop registers a drop opening at opensAt (unix ms) after a pre-queue
// of prequeueSeconds, with a fresh draw seed, and creates its topic.
func (s *System) CreateDrop(id string, capacity, partitions int, opensAt int64, prequeueSeconds int) queue.Event {
	s.tb.Helper()
	seed, err := draw.NewSeed()
	if err != nil {
		s.tb.Fatal(err)
	}
	return s.createEvent(queue.Event{ID: id, Capacity: capacity, StaySeconds: 60, State: queue.StateOpen, Partitions: partitions,
		Schedule: queue.Schedule{OpensAt: opensAt, PrequeueSeconds: prequeueSeconds}, Seed: &seed})
}

func (s *System) createEvent(e queue.Event) queue.Event {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, partitions := e.ID, e.Partitions
	if err := s.Pub.Admin().EnsureTopic(ctx, id, partitions); err != nil {
		s.tb.Fatal(err)
	}
	if _, err := s.Store.PutEvent(ctx, e); err != nil {
		s.tb.Fatal(err)
	}
	return e
}

// ConsumerConfig returns the settings tests use: fast discovery, a short
// session and fast retries.
func (s *System) ConsumerConfig() kafkajoin.ConsumerConfig {
	return kafkajoin.ConsumerConfig{
		BrokerConfig:      s.BrokerConfig,
		DiscoveryInterval: 200 * time.Millisecond,
		SessionTimeout:    1500 * time.Millisecond,
		RetryMin:          20 * time.Millisecond,
		RetryMax:          300 * time.Millisecond,
		Logger:            testenv.Logger(s.tb),
	}
}

// Consumer is a running consumer and the means to stop it.
type Consumer struct {
	*kafkajoin.Consumer
	stop func()
}

// Stop ends the consumer gracefully and waits for it.
func (c *Consumer) Stop() { c.stop() }

// StartConsumer runs a consumer with cfg writing into the store until Stop or
// cleanup.
func (s *System) StartConsumer(cfg kafkajoin.ConsumerConfig) *Consumer {
	return s.StartConsumerInto(cfg, s.Store)
}

// StartConsumerInto runs a consumer with cfg writing into sink (such as the
// store with the fast track on) until Stop or cleanup.
func (s *System) StartConsumerInto(cfg kafkajoin.ConsumerConfig, sink queue.IngestStore) *Consumer {
	c, err := kafkajoin.NewConsumer(cfg, sink)
	if err != nil {
		s.tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Run(ctx); err != nil {
			s.tb.Errorf("consumer: %v", err)
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	s.tb.Cleanup(stop)
	return &Consumer{Consumer: c, stop: stop}
}

// Join publishes a join of user to event with the given stamp.
func (s *System) Join(event, user string, ts int64) {
	s.tb.Helper()
	s.publish(queue.Message{V: queue.MessageVersion, Op: queue.OpJoin, EventID: event, UserID: user, TS: ts, ID: user + "-join"})
}

// Leave publishes a leave of user from event.
func (s *System) Leave(event, user string, ts int64) {
	s.tb.Helper()
	s.publish(queue.Message{V: queue.MessageVersion, Op: queue.OpLeave, EventID: event, UserID: user, TS: ts, ID: user + "-leave"})
}

func (s *System) publish(m queue.Message) {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Pub.Publish(ctx, m); err != nil {
		s.tb.Fatalf("publish %+v: %v", m, err)
	}
}

// Waiting returns event's waiting line, head first, with scores.
func (s *System) Waiting(event string) []WaitingUser {
	s.tb.Helper()
	zs, err := s.Store.Client().ZRangeWithScores(context.Background(), redisstore.WaitingKey(event), 0, -1).Result()
	if err != nil {
		s.tb.Fatalf("read waiting line: %v", err)
	}
	out := make([]WaitingUser, len(zs))
	for i, z := range zs {
		out[i] = WaitingUser{User: z.Member.(string), TS: int64(z.Score)}
	}
	return out
}

// WaitingIDs is the user ids of event's waiting line, in order.
func (s *System) WaitingIDs(event string) []string {
	s.tb.Helper()
	line := s.Waiting(event)
	ids := make([]string, len(line))
	for i, u := range line {
		ids[i] = u.User
	}
	return ids
}

// WaitingUser is one entry of a waiting line.
type WaitingUser struct {
	User string
	TS   int64
}

// ReadTopic reads the first n messages of partition 0 of event's topic.
func (s *System) ReadTopic(event string, n int) []queue.Message {
	s.tb.Helper()
	out := make([]queue.Message, 0, n)
	for _, km := range s.ReadPartition(event, 0, n) {
		m, err := queue.DecodeMessage(km.Value)
		if err != nil {
			s.tb.Fatalf("decode %s: %v", km.Value, err)
		}
		out = append(out, m)
	}
	return out
}

// ReadPartition reads the first n messages of one partition of event's
// topic.
func (s *System) ReadPartition(event string, partition, n int) []kafka.Message {
	s.tb.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: s.BrokerConfig.Brokers, Topic: s.BrokerConfig.Topic(event), Partition: partition, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := make([]kafka.Message, 0, n)
	for len(out) < n {
		km, err := r.ReadMessage(ctx)
		if err != nil {
			s.tb.Fatalf("read %s partition %d: %v after %d messages", s.BrokerConfig.Topic(event), partition, err, len(out))
		}
		out = append(out, km)
	}
	return out
}

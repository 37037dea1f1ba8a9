package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack"
)

// The baseline programs of "loadgen cost": each does one program's job
// with nothing else, so that cost can set the CPU a join costs the program
// against the least that job needs. cost runs them as child processes of
// their own ("loadgen baseline producer|ingest"); their settings come from
// the environment as the services' do:
//
//   - producer: an echo server on WAITQ_HTTP_ADDR whose join route reads
//     the same request (event, X-User-Id, Idempotency-Key), builds the same
//     message and publishes it with a kafka-go Writer at acks=all (key = user
//     id, Murmur2, the service's batch timeout) to WAITQ_TOPIC_PREFIX +
//     event on WAITQ_KAFKA_BROKERS, answering 202 once it is acknowledged: no
//     identity, no door, no metrics, no logs.
//   - ingest: a kafka-go group member (WAITQ_GROUP_ID, the consumer's
//     reader settings) of topic WAITQ_TOPIC_PREFIX + WAITQ_COST_EVENT that
//     decodes each batch of at most WAITQ_MAX_BATCH messages, writes their
//     joins into the event's line at WAITQ_REDIS_URL with a go-redis
//     pipeline of ZADDs, and commits after the write.
//
// Both answer /readyz on WAITQ_HTTP_ADDR once they run.

// RunBaseline runs the baseline program args[0] until ctx ends.
func RunBaseline(ctx context.Context, args []string, _, stderr io.Writer) error {
	env := func(k string) string { return os.Getenv(k) }
	brokers := strings.Split(env("WAITQ_KAFKA_BROKERS"), ",")
	if len(args) != 1 || env("WAITQ_HTTP_ADDR") == "" || brokers[0] == "" {
		return errors.New(`usage: loadgen baseline producer|ingest, with WAITQ_HTTP_ADDR and WAITQ_KAFKA_BROKERS set (run by "loadgen cost")`)
	}
	switch args[0] {
	case "producer":
		return runProducerBaseline(ctx, env("WAITQ_HTTP_ADDR"), brokers, env("WAITQ_TOPIC_PREFIX"))
	case "ingest":
		maxBatch, err := strconv.Atoi(env("WAITQ_MAX_BATCH"))
		if err != nil || maxBatch < 1 {
			return fmt.Errorf("WAITQ_MAX_BATCH=%q: want a positive number", env("WAITQ_MAX_BATCH"))
		}
		opt, err := redis.ParseURL(env("WAITQ_REDIS_URL"))
		if err != nil {
			return fmt.Errorf("WAITQ_REDIS_URL: %w", err)
		}
		m := ingestBaseline{brokers: brokers, topic: env("WAITQ_TOPIC_PREFIX") + env("WAITQ_COST_EVENT"),
			group: env("WAITQ_GROUP_ID"), key: redisstore.WaitingKey(env("WAITQ_COST_EVENT")), maxBatch: maxBatch, stderr: stderr}
		return m.run(ctx, env("WAITQ_HTTP_ADDR"), redis.NewClient(opt))
	default:
		return fmt.Errorf("unknown baseline %q: producer or ingest", args[0])
	}
}

// serveBaseline serves e, with its /readyz, on addr until ctx ends.
func serveBaseline(ctx context.Context, addr string, e *echo.Echo) error {
	e.HideBanner, e.HidePort = true, true
	e.GET("/readyz", func(c echo.Context) error { return c.NoContent(http.StatusOK) })
	_, stop, err := serve("baseline", addr, e)
	if err != nil {
		return err
	}
	<-ctx.Done()
	stop()
	return nil
}

// writerPublishTimeout bounds one publish of the producer baseline, as
// producer-api's default WAITQ_PUBLISH_TIMEOUT bounds one of its own.
const writerPublishTimeout = 3 * time.Second

// echoAnswer is the producer baseline's small JSON body.
type echoAnswer struct {
	EventID  string `json:"eventId"`
	UserID   string `json:"userId"`
	JoinedAt int64  `json:"joinedAt"`
}

// runProducerBaseline serves the producer baseline's join route on addr.
func runProducerBaseline(ctx context.Context, addr string, brokers []string, prefix string) error {
	w := &kafka.Writer{
		Addr: kafka.TCP(brokers...), Balancer: &kafka.Murmur2Balancer{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: kafkajoin.DefaultBatchTimeout, Transport: &kafka.Transport{ClientID: "cost-baseline"},
	}
	defer w.Close()
	e := echo.New()
	e.POST("/v1/events/:eventId/queue", func(c echo.Context) error {
		h := c.Request().Header
		m := queue.Message{
			V: queue.MessageVersion, Op: queue.OpJoin, EventID: c.Param("eventId"), UserID: h.Get("X-User-Id"),
			TS: time.Now().UnixMilli(), ID: stack.RandomHex(12), JoinKey: h.Get("Idempotency-Key"),
		}
		v, err := m.Encode()
		if err != nil {
			return c.JSON(http.StatusBadRequest, map[string]string{"error": err.Error()})
		}
		wctx, cancel := context.WithTimeout(c.Request().Context(), writerPublishTimeout)
		defer cancel()
		if err := w.WriteMessages(wctx, kafka.Message{Topic: prefix + m.EventID, Key: []byte(m.UserID), Value: v}); err != nil {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		}
		return c.JSON(http.StatusAccepted, echoAnswer{EventID: m.EventID, UserID: m.UserID, JoinedAt: m.TS})
	})
	return serveBaseline(ctx, addr, e)
}

// ingestBaseline is the ingest baseline's settings.
type ingestBaseline struct {
	brokers      []string
	topic, group string
	key          string // the line's key
	maxBatch     int
	stderr       io.Writer
}

// run reads the topic in batches into the line until ctx ends.
func (b ingestBaseline) run(ctx context.Context, addr string, rc *redis.Client) error {
	defer rc.Close()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: b.brokers, GroupID: b.group, GroupTopics: []string{b.topic},
		MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 500 * time.Millisecond, QueueCapacity: b.maxBatch,
		CommitInterval: 0, StartOffset: kafka.FirstOffset, ReadLagInterval: -1,
	})
	defer r.Close()
	msgs := make(chan kafka.Message, b.maxBatch)
	fetch := stack.Go(ctx, func(ctx context.Context) error {
		for {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				return ctx.Err()
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return nil
			}
		}
	})
	defer fetch.Stop(5 * time.Second)
	write := stack.Go(ctx, func(ctx context.Context) error { return b.write(ctx, r, rc, msgs) })
	defer write.Stop(5 * time.Second)
	return serveBaseline(ctx, addr, echo.New())
}

// write gathers msgs into batches of at most maxBatch (what is there, as
// the consumer does), ZADDs each batch's joins in one pipeline and commits
// the batch once written, until ctx ends.
func (b ingestBaseline) write(ctx context.Context, r *kafka.Reader, rc *redis.Client, msgs <-chan kafka.Message) error {
	batch := make([]kafka.Message, 0, b.maxBatch)
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-msgs:
			batch = append(batch[:0], m)
		}
	drain:
		for len(batch) < b.maxBatch {
			select {
			case m := <-msgs:
				batch = append(batch, m)
			default:
				break drain
			}
		}
		p := rc.Pipeline()
		for _, km := range batch {
			m, err := queue.DecodeMessage(km.Value)
			if err != nil {
				fmt.Fprintf(b.stderr, "baseline: %s/%d@%d: %v\n", km.Topic, km.Partition, km.Offset, err)
				continue
			}
			p.ZAdd(ctx, b.key, redis.Z{Score: float64(m.TS), Member: m.UserID})
		}
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("baseline: write: %w", err)
		}
		if err := r.CommitMessages(ctx, batch...); err != nil {
			return fmt.Errorf("baseline: commit: %w", err)
		}
	}
}

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

// The baseline programs of "loadgen cost" (docs/performance.md, what a join
// costs): each does one program's job with nothing else, so that cost can
// set the CPU a join costs the program against the least that job needs.
// cost runs them as children ("loadgen baseline producer|ingest"), set
// through the environment as the services are:
//
//   - producer: an echo server on WAITQ_HTTP_ADDR whose join route builds
//     producer-api's message from the same request and publishes it to
//     costJoinPrefix + event on WAITQ_KAFKA_BROKERS with a kafka-go Writer
//     at acks=all, answering 202 once it is acknowledged.
//   - ingest: a kafka-go member of WAITQ_GROUP_ID (the consumer's reader
//     settings) of the bench event's topic that writes each batch of at
//     most WAITQ_MAX_BATCH joins into its line at WAITQ_REDIS_URL with a
//     pipeline of ZADDs, and commits after the write.
//
// Both answer /readyz on WAITQ_HTTP_ADDR once they run.

// RunBaseline runs the baseline program args[0] until ctx ends.
func RunBaseline(ctx context.Context, args []string, _, stderr io.Writer) error {
	addr, brokers := os.Getenv("WAITQ_HTTP_ADDR"), strings.Split(os.Getenv("WAITQ_KAFKA_BROKERS"), ",")
	if len(args) != 1 || addr == "" || brokers[0] == "" {
		return errors.New(`usage: loadgen baseline producer|ingest, with WAITQ_HTTP_ADDR and WAITQ_KAFKA_BROKERS set (run by "loadgen cost")`)
	}
	switch args[0] {
	case "producer":
		return runProducerBaseline(ctx, addr, brokers)
	case "ingest":
		maxBatch, err := strconv.Atoi(os.Getenv("WAITQ_MAX_BATCH"))
		if err != nil || maxBatch < 1 {
			return fmt.Errorf("WAITQ_MAX_BATCH=%q: want a positive number", os.Getenv("WAITQ_MAX_BATCH"))
		}
		opt, err := redis.ParseURL(os.Getenv("WAITQ_REDIS_URL"))
		if err != nil {
			return fmt.Errorf("WAITQ_REDIS_URL: %w", err)
		}
		b := ingestBaseline{brokers: brokers, group: os.Getenv("WAITQ_GROUP_ID"), maxBatch: maxBatch, stderr: stderr}
		return b.run(ctx, addr, redis.NewClient(opt))
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
// producer-api's default WAITQ_PUBLISH_TIMEOUT does one of its own.
const writerPublishTimeout = 3 * time.Second

// echoAnswer is the producer baseline's small JSON body.
type echoAnswer struct {
	EventID  string `json:"eventId"`
	UserID   string `json:"userId"`
	JoinedAt int64  `json:"joinedAt"`
}

// runProducerBaseline serves the producer baseline's join route on addr.
func runProducerBaseline(ctx context.Context, addr string, brokers []string) error {
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
		if err := w.WriteMessages(wctx, kafka.Message{Topic: costJoinPrefix + m.EventID, Key: []byte(m.UserID), Value: v}); err != nil {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		}
		return c.JSON(http.StatusAccepted, echoAnswer{EventID: m.EventID, UserID: m.UserID, JoinedAt: m.TS})
	})
	return serveBaseline(ctx, addr, e)
}

// ingestBaseline is the ingest baseline's settings.
type ingestBaseline struct {
	brokers  []string
	group    string
	maxBatch int
	stderr   io.Writer
}

// run reads the topic in batches into the line until ctx ends.
func (b ingestBaseline) run(ctx context.Context, addr string, rc *redis.Client) error {
	defer rc.Close()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: b.brokers, GroupID: b.group, GroupTopics: []string{kafkajoin.DefaultTopicPrefix + benchEvent},
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
			p.ZAdd(ctx, redisstore.WaitingKey(benchEvent), redis.Z{Score: float64(m.TS), Member: m.UserID})
		}
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("baseline: write: %w", err)
		}
		if err := r.CommitMessages(ctx, batch...); err != nil {
			return fmt.Errorf("baseline: commit: %w", err)
		}
	}
}

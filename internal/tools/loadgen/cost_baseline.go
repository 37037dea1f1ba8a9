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
// costs) each do one program's job with nothing else: what a join costs the
// program is set against the least that job needs. cost runs them as
// children ("loadgen baseline producer|ingest") with the services'
// environment; both answer /readyz on WAITQ_HTTP_ADDR once they run.
//
//   - producer: an echo server whose join route builds producer-api's
//     message from the same request and publishes it with a kafka-go Writer
//     at acks=all, answering 202 once it is acknowledged.
//   - ingest: a kafka-go member of WAITQ_GROUP_ID (the consumer's reader
//     settings) that ZADDs each batch of at most WAITQ_MAX_BATCH joins of
//     the bench event into its line with one pipeline, then commits.

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
		return runIngestBaseline(ctx, addr, brokers, os.Getenv("WAITQ_GROUP_ID"), maxBatch, redis.NewClient(opt), stderr)
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
		wctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second) // producer-api's default WAITQ_PUBLISH_TIMEOUT
		defer cancel()
		if err := w.WriteMessages(wctx, kafka.Message{Topic: costJoinPrefix + m.EventID, Key: []byte(m.UserID), Value: v}); err != nil {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		}
		return c.JSON(http.StatusAccepted, echoAnswer{EventID: m.EventID, UserID: m.UserID, JoinedAt: m.TS})
	})
	return serveBaseline(ctx, addr, e)
}

// runIngestBaseline reads the bench event's topic as a member of group into
// its line, in batches of at most maxBatch, until ctx ends.
func runIngestBaseline(ctx context.Context, addr string, brokers []string, group string, maxBatch int, rc *redis.Client, stderr io.Writer) error {
	defer rc.Close()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: brokers, GroupID: group, GroupTopics: []string{kafkajoin.DefaultTopicPrefix + benchEvent},
		MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 500 * time.Millisecond, QueueCapacity: maxBatch,
		CommitInterval: 0, StartOffset: kafka.FirstOffset, ReadLagInterval: -1,
	})
	defer r.Close()
	msgs := make(chan kafka.Message, maxBatch)
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
	write := stack.Go(ctx, func(ctx context.Context) error { return writeBaselineBatches(ctx, r, rc, msgs, stderr) })
	defer write.Stop(5 * time.Second)
	return serveBaseline(ctx, addr, echo.New())
}

// writeBaselineBatches gathers msgs into batches of at most their capacity
// (what is there, as the consumer does), ZADDs each batch's joins in one
// pipeline and commits the batch once written, until ctx ends.
func writeBaselineBatches(ctx context.Context, r *kafka.Reader, rc *redis.Client, msgs <-chan kafka.Message, stderr io.Writer) error {
	batch := make([]kafka.Message, 0, cap(msgs))
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-msgs:
			batch = append(batch[:0], m)
		}
		for len(batch) < cap(msgs) && len(msgs) > 0 { // this goroutine alone receives: no wait
			batch = append(batch, <-msgs)
		}
		p := rc.Pipeline()
		for _, km := range batch {
			m, err := queue.DecodeMessage(km.Value)
			if err != nil {
				fmt.Fprintf(stderr, "baseline: %s/%d@%d: %v\n", km.Topic, km.Partition, km.Offset, err)
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

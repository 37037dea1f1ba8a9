package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/stack"
)

// writerPublishTimeout bounds one publish of the kafka-writer baseline, as
// producer-api's default WAITQ_PUBLISH_TIMEOUT bounds one of its own.
const writerPublishTimeout = 3 * time.Second

// measureWriter measures the kafka-writer baseline, the broker's limit for
// the join path: the service's own Kafka writer (kafkajoin.NewPublisher:
// acks=all, key = user id, Murmur2, the batch timeout of the started
// producer-api) publishing the join messages producer-api would build into
// the bench topic, each worker waiting for its acknowledgement (bounded as
// one of producer-api's), with the workers, bounds and record of
// measureTarget. No HTTP is involved.
func measureWriter(ctx context.Context, cfg joinsConfig, brokers []string, prefix string, stderr io.Writer) (result, error) {
	bt, err := time.ParseDuration(cmp.Or(cfg.batchTimeout, "0s")) // 0: the service default
	if err != nil {
		return result{}, fmt.Errorf("-batch-timeout: %w", err)
	}
	pub, err := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: kafkajoin.BrokerConfig{Brokers: brokers}, BatchTimeout: bt})
	if err != nil {
		return result{}, err
	}
	defer func() {
		if err := pub.Close(); err != nil {
			fmt.Fprintf(stderr, "loadgen: kafka-writer: close: %v\n", err)
		}
	}()
	publish := func(ph phase) request {
		return func(ctx context.Context, w *worker, n int) (string, string) {
			m := queue.Message{V: queue.MessageVersion, Op: queue.OpJoin, EventID: benchEvent,
				UserID: userOf(ph.prefix, w, n), TS: time.Now().UnixMilli(), ID: stack.RandomHex(12)}
			ctx, cancel := context.WithTimeout(ctx, writerPublishTimeout)
			defer cancel()
			if err := pub.Publish(ctx, m); err != nil {
				return "publish", err.Error()
			}
			return "", ""
		}
	}
	r, _, err := warmThenMeasure(ctx, &loadClient{http: &http.Client{}}, target{name: "kafka-writer"}, cfg.concurrency, cfg.duration, warmup, cfg.maxReqs, prefix, publish, stderr)
	return r, err
}

// echoAnswer is the bare handler's small JSON body.
type echoAnswer struct {
	EventID  string `json:"eventId"`
	UserID   string `json:"userId"`
	JoinedAt int64  `json:"joinedAt"`
}

// startBareEcho serves a plain echo v4 router whose join route answers 202
// with a small JSON body, on a free loopback port, and returns its base URL.
func startBareEcho() (base string, stop func(), err error) {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.POST("/v1/events/:eventId/queue", func(c echo.Context) error {
		return c.JSON(http.StatusAccepted, echoAnswer{
			EventID: c.Param("eventId"), UserID: c.Request().Header.Get("X-User-Id"), JoinedAt: time.Now().UnixMilli(),
		})
	})
	return serve("bare echo", loopback, e)
}

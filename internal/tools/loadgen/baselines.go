package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
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
// producer-api) publishing the same join messages into the bench topic, each
// worker waiting for its acknowledgement, with the workers, bounds and
// record of measureTarget. No HTTP is involved: publishTransport stands in
// for the network.
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
	lc := &loadClient{http: &http.Client{Transport: publishTransport{pub: pub}, Timeout: 10 * time.Second}}
	// The .invalid host (RFC 2606) is never dialled: publishTransport
	// answers every request itself.
	t := target{"kafka-writer", "http://kafka-writer.invalid/v1/events/" + benchEvent + "/queue"}
	r, _, err := measureTarget(ctx, lc, cfg, t, prefix, stderr)
	return r, err
}

// publishTransport is the http.RoundTripper of the kafka-writer baseline. It
// sends nothing over the network: it publishes the join of the request's
// X-User-Id to the bench event, built as producer-api builds it, and
// answers 202 once the broker acknowledged it, or 503 with the error (as the
// service answers broker_unavailable). Behind an http.Client it lets the
// HTTP workers of workers.go drive the bare writer. Safe for concurrent use.
type publishTransport struct {
	pub *kafkajoin.Publisher
}

// RoundTrip implements http.RoundTripper.
func (t publishTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	m := queue.Message{
		V: queue.MessageVersion, Op: queue.OpJoin, EventID: benchEvent, UserID: req.Header.Get("X-User-Id"),
		TS: time.Now().UnixMilli(), ID: stack.RandomHex(12),
	}
	ctx, cancel := context.WithTimeout(req.Context(), writerPublishTimeout)
	defer cancel()
	status, body := http.StatusAccepted, ""
	if err := t.pub.Publish(ctx, m); err != nil {
		status, body = http.StatusServiceUnavailable, err.Error()
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}, nil
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
	return serveLoopback("bare echo", e)
}

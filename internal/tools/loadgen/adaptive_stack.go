package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/stack/svcproc"
)

// adaptiveStack is one run's services over a stack of its own: producer-
// api, ingest-consumer, a ws-gateway, the demo shop and waitq-guard in
// front of it, with the run's event.
type adaptiveStack struct {
	*infra
	guard string // base URL
	event string
	shop  *demoshop.Shop
}

// startAdaptiveStack starts the services of a run admitting by m, its
// event created before the consumer starts and the guard, its target,
// last (it reports with the event's report token). Like a guard in front
// of a live shop, it has reported before the sale starts: the stack is
// returned once producer-api holds its first report.
func startAdaptiveStack(ctx context.Context, cfg adaptiveConfig, m admissionMode, stderr io.Writer) (_ *adaptiveStack, err error) {
	guardAddr, err := svcproc.FreeAddr() // the event's target, known before the guard starts
	if err != nil {
		return nil, err
	}
	event := "adaptive-" + m.name
	st, err := startStack(ctx, stackSpec{producer: true, events: map[string]string{event: eventBody(cfg, m, "http://"+guardAddr+"/")},
		ingest: true, gateways: 1, gatewayEnv: map[string]string{"WAITQ_ADMIT_INTERVAL": adaptiveMonitor.String()}}, stderr)
	if err != nil {
		return nil, err
	}
	s := &adaptiveStack{infra: st, event: event}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.shop, err = demoshop.New(demoshop.Config{Workers: cfg.workers, WorkTime: cfg.workTime, QueueTimeout: cfg.queueTimeout}); err != nil {
		return nil, err
	}
	shopBase, stopShop, err := serve("demo shop", loopback, s.shop)
	if err != nil {
		return nil, err
	}
	s.AtClose(stopShop)
	ev, err := s.status(ctx)
	if err != nil {
		return nil, err
	}
	var stopGuard func()
	s.guard, stopGuard, err = startGuard(ctx, map[string]string{
		"WAITQ_HTTP_ADDR":        guardAddr,
		"WAITQ_ORIGIN_URL":       shopBase,
		"WAITQ_EVENT_ID":         s.event,
		"WAITQ_WAITING_ROOM_URL": s.gateways[0] + "/",
		"WAITQ_GATEWAY_URL":      s.gateways[0],
		"WAITQ_DONE_PATH":        "/order",
		"WAITQ_HEALTH_URL":       s.producer,
		"WAITQ_HEALTH_TOKEN":     ev.ReportToken,
		"WAITQ_HEALTH_INTERVAL":  adaptiveInterval.String(),
		"WAITQ_HEALTH_WINDOW":    adaptiveWindow.String(),
	}, stderr)
	if err != nil {
		return nil, err
	}
	s.AtClose(stopGuard)
	return s, poll(ctx, 15*time.Second, 200*time.Millisecond, func() (bool, error) {
		ev, err := s.status(ctx)
		return err == nil && len(ev.Health) > 0, err
	}, func(err error) error {
		return fmt.Errorf("no health report of the guard reached producer-api within 15s (%v)", err)
	})
}

// eventBody is the admin PUT body of a run's event: room for everyone, the
// guard as its target, the rate of m.
func eventBody(cfg adaptiveConfig, m admissionMode, target string) string {
	body := map[string]any{
		"capacity": adaptiveCapacity, "holdSeconds": adaptiveHold, "partitions": benchPartitions,
		"admitPerMinute": m.perMinute, "targetUrl": target,
	}
	if m.adaptive {
		body["adaptive"] = map[string]any{
			"targetLatencyMs":      cfg.target.Milliseconds(),
			"stepMs":               cfg.step.Milliseconds(),
			"signalTimeoutSeconds": int(math.Ceil(max(adaptiveSignalTimeout, cfg.step).Seconds())),
		}
	}
	b, _ := json.Marshal(body)
	return string(b)
}

// status reads the run's event through producer-api's admin GET.
func (s *adaptiveStack) status(ctx context.Context) (queue.EventStatus, error) {
	var ev queue.EventStatus
	return ev, adminCall(ctx, http.MethodGet, s.producer+"/v1/admin/events/"+s.event, s.token, "", &ev)
}

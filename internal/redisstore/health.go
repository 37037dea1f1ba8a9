package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
)

// Health reports and the adaptive controller's state (lua/adaptive.lua is
// the controller, run inside the admission step; queue.Adaptive says what
// it does).

// Limits on an event's reporters.
const (
	// MaxReporters is the most reporters an event keeps reports of.
	MaxReporters = 64
	// ReporterExpiry is how old a reporter's latest report grows before a
	// new reporter may take its place (a guard replica that went away).
	ReporterExpiry = 10 * time.Minute
)

// ReportHealth keeps r as its reporter's latest report of eventID, received
// at nowMs. It fails with queue.ErrEventNotFound for an unknown event and
// CodeTooManyReporters when the event already has MaxReporters reporters
// with recent reports.
func (s *Store) ReportHealth(ctx context.Context, eventID string, r queue.HealthReport, nowMs int64) error {
	r.Reporter = r.Name()
	b, err := json.Marshal(queue.ReporterHealth{HealthReport: r, At: nowMs})
	if err != nil {
		return fmt.Errorf("redisstore: health report of %s: %w", eventID, err)
	}
	k := keysOf(eventID)
	n, err := runScript(ctx, s.c, healthScript, []string{k.config, k.health, k.control},
		nowMs, r.Reporter, b, MaxReporters, ReporterExpiry.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("redisstore: health report of %s: %w", eventID, err)
	}
	switch n {
	case codeOK:
		return nil
	case codeNoEvent:
		return queue.ErrEventNotFound
	case codeTooManyReporters:
		return queue.Errorf(queue.CodeTooManyReporters, "event %s already has %d reporters; a reporter's place frees %s after its last report", eventID, MaxReporters, ReporterExpiry)
	}
	return fmt.Errorf("redisstore: health report of %s: unexpected reply %d", eventID, n)
}

// adaptiveFields are the config hash's fields of queue.Adaptive.
var adaptiveFields = []string{"adaptive.targetLatencyMs", "adaptive.maxErrorRate", "adaptive.maxLoad", "adaptive.minAdmitPerMinute",
	"adaptive.startAdmitPerMinute", "adaptive.increasePerStep", "adaptive.decreaseFactor", "adaptive.stepMs", "adaptive.maxSettleSeconds",
	"adaptive.signalTimeoutSeconds", "adaptive.onSignalLoss"}

// controllerFields are the control hash's fields of the controller's own
// state, dropped when an event stops being adaptive so that it starts
// afresh when it is made adaptive again (signalAt, the newest report,
// stays).
var controllerFields = []string{"rate", "ssthresh", "phase", "effective", "stepAt", "usedAt", "decreasedAt", "rateAt", "limited", "lost", "signal", "signalStepAt"}

// eventHealth reads an event's reports and controller in one round trip
// of p's; call parse once p ran.
type eventHealth struct {
	control *redis.MapStringStringCmd
	health  *redis.MapStringStringCmd
	changes *redis.StringSliceCmd
}

func readHealth(ctx context.Context, p redis.Pipeliner, k eventKeys) eventHealth {
	return eventHealth{
		control: p.HGetAll(ctx, k.control),
		health:  p.HGetAll(ctx, k.health),
		changes: p.LRange(ctx, k.changes, 0, -1),
	}
}

// parse returns the reporters' latest reports, newest first, and, for an
// adaptive event, its controller.
func (h eventHealth) parse(adaptive bool) ([]queue.ReporterHealth, *queue.ControlStatus, error) {
	var reports []queue.ReporterHealth
	for name, v := range h.health.Val() {
		var r queue.ReporterHealth
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			return nil, nil, fmt.Errorf("health report of %s: %w", name, err)
		}
		reports = append(reports, r)
	}
	slices.SortFunc(reports, func(a, b queue.ReporterHealth) int {
		return cmp.Or(cmp.Compare(b.At, a.At), cmp.Compare(a.Reporter, b.Reporter))
	})
	if !adaptive {
		return reports, nil, nil
	}
	c := h.control.Val()
	num := func(f string) int64 {
		n, _ := strconv.ParseFloat(c[f], 64)
		return int64(n)
	}
	cs := &queue.ControlStatus{
		AdmitPerMinute: int(num("effective")), Rate: int(num("rate")), Phase: c["phase"], SignalLost: c["lost"] == "1",
		Reason: c["reason"], Detail: c["detail"], ChangedAt: num("changedAt"), SignalAt: num("signalStepAt"),
		Increases: num("increases"), Decreases: num("decreases"), Stops: num("stops"),
		Changes: []queue.RateChange{},
	}
	if v, ok := c["signal"]; ok {
		cs.Signal = new(queue.Signal)
		if err := json.Unmarshal([]byte(v), cs.Signal); err != nil {
			return nil, nil, fmt.Errorf("controller signal: %w", err)
		}
	}
	for _, v := range h.changes.Val() {
		var ch queue.RateChange
		if err := json.Unmarshal([]byte(v), &ch); err != nil {
			return nil, nil, fmt.Errorf("rate change: %w", err)
		}
		cs.Changes = append(cs.Changes, ch)
	}
	return reports, cs, nil
}

package producer_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testdraw"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/draw"
)

// TestDropScheduleJoinsAndReveal walks a drop on the server's clock: joins
// before the pre-queue are refused 409 event_not_open with opensAt and a
// Retry-After; pre-queue joins are taken; the commitment is public from
// scheduling on and the seed is readable nowhere (public GET, admin GET,
// draw export, metrics, logs) before the opening; after it the seed hashes
// to the commitment and the exported order verifies; joins after closesAt
// are refused event_closed.
func TestDropScheduleJoinsAndReveal(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	var clock atomic.Int64
	t0 := time.Now().Truncate(time.Second)
	clock.Store(t0.UnixMilli())
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	logs := &testenv.Buffer{}
	reg := prometheus.NewRegistry()
	e := startAPIWith(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken}, func(d *producer.Deps) {
		d.Logger, d.Now, d.Registry = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), now, reg
	})
	ev := testenv.EventID(t)
	opensAt := t0.Add(time.Hour).UnixMilli()

	// Scheduling: the commitment is published, the seed is not.
	r := e.putEvent(t, ev, fmt.Sprintf(`{"capacity":10,"partitions":2,"opensAt":%d,"prequeueSeconds":600,"closesAt":%d}`, opensAt, opensAt+3_600_000))
	if r.status != http.StatusCreated {
		t.Fatalf("schedule: %d %s", r.status, r.body)
	}
	var st queue.EventStatus
	_ = json.Unmarshal(r.body, &st)
	if st.Phase != queue.PhaseScheduled || st.Draw == nil || len(st.Draw.Commitment) != 64 || st.Draw.Seed != "" {
		t.Fatalf("scheduled event: phase %s, draw %+v", st.Phase, st.Draw)
	}
	commitment := st.Draw.Commitment
	seedHex := sys.Store.Client().HGet(t.Context(), "waitq:{"+ev+"}:config", "drawSeed").Val()
	if len(seedHex) != 64 {
		t.Fatalf("no seed stored: %q", seedHex)
	}

	// Too early: 409 with opensAt and a Retry-After to the pre-queue.
	r = e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", user("early"), nil)
	if r.status != http.StatusConflict || r.errorCode(t) != queue.CodeEventNotOpen || r.header.Get("Retry-After") != "3000" ||
		!strings.Contains(string(r.body), fmt.Sprintf(`"opensAt":%d`, opensAt)) {
		t.Fatalf("join before the pre-queue: %d %v %s", r.status, r.header.Get("Retry-After"), r.body)
	}

	// The pre-queue: joins are taken.
	clock.Store(opensAt - 300_000)
	var fans []string
	for i := range 20 {
		u := fmt.Sprintf("fan%02d", i)
		fans = append(fans, u)
		if r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", user(u), nil); r.status != http.StatusAccepted {
			t.Fatalf("pre-queue join: %d %s", r.status, r.body)
		}
		clock.Add(1)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		n := len(sys.Waiting(ev))
		return n == 20, fmt.Sprintf("%d in the pre-queue", n)
	})
	// The schedule is locked now.
	if r := e.putEvent(t, ev, fmt.Sprintf(`{"opensAt":%d}`, opensAt+60_000)); r.status != http.StatusConflict || r.errorCode(t) != queue.CodeScheduleLocked {
		t.Fatalf("moving the opening during the pre-queue: %d %s", r.status, r.body)
	}
	// Nowhere before the opening.
	pub := e.do(t, http.MethodGet, "/v1/events/"+ev, nil, nil)
	adm := e.do(t, http.MethodGet, "/v1/admin/events/"+ev, admin(), nil)
	list := e.do(t, http.MethodGet, "/v1/admin/events", admin(), nil)
	exp := e.do(t, http.MethodGet, "/v1/admin/events/"+ev+"/draw", admin(), nil)
	if exp.status != http.StatusConflict || exp.errorCode(t) != queue.CodeDrawNotRevealed {
		t.Fatalf("draw export before the opening: %d %s", exp.status, exp.body)
	}
	metrics := scrape(t, reg)
	for name, text := range map[string]string{"public GET": string(pub.body), "admin GET": string(adm.body), "admin list": string(list.body),
		"draw export": string(exp.body), "metrics": metrics, "logs": logs.String()} {
		if strings.Contains(strings.ToLower(text), seedHex) {
			t.Errorf("the seed is readable in the %s before the opening", name)
		}
	}
	var pe producer.PublicEvent
	if err := json.Unmarshal(pub.body, &pe); err != nil || pe.Phase != queue.PhasePrequeue || pe.Draw.Commitment != commitment || pe.Draw.PrequeueSize != 20 || pe.OpensAt != opensAt {
		t.Fatalf("public event in the pre-queue: %s", pub.body)
	}
	if !strings.Contains(metrics, fmt.Sprintf(`waitq_event_prequeue_size{event=%q} 20`, ev)) {
		t.Errorf("metrics lack the pre-queue size:\n%s", metrics)
	}
	if !strings.Contains(metrics, fmt.Sprintf(`waitq_event_opens_at_seconds{event=%q} %s`, ev, strconv.FormatFloat(float64(opensAt)/1000, 'g', -1, 64))) {
		t.Errorf("metrics lack the opening:\n%s", metrics)
	}

	// The opening: the seed is revealed, hashes to the commitment, and the
	// exported order verifies and is the documented rule's.
	clock.Store(opensAt)
	pub = e.do(t, http.MethodGet, "/v1/events/"+ev, nil, nil)
	_ = json.Unmarshal(pub.body, &pe)
	raw, _ := hex.DecodeString(pe.Draw.Seed)
	sum := sha256.Sum256(raw)
	if pe.Phase != queue.PhaseOpen || hex.EncodeToString(sum[:]) != commitment {
		t.Fatalf("public event at the opening: %s", pub.body)
	}
	exp = e.do(t, http.MethodGet, "/v1/admin/events/"+ev+"/draw", admin(), nil)
	var x draw.Export
	if err := json.Unmarshal(exp.body, &x); err != nil || exp.status != http.StatusOK {
		t.Fatalf("draw export: %d %s", exp.status, exp.body)
	}
	if err := x.Verify(); err != nil {
		t.Fatalf("the exported draw does not verify: %v", err)
	}
	if !slices.Equal(x.Order, testdraw.Order(t, pe.Draw.Seed, fans)) || !slices.IsSorted(x.Users) || len(x.Users) != 20 {
		t.Fatalf("export %+v is not the documented order of the 20 fans", x)
	}

	// After the close: no more joins.
	clock.Store(opensAt + 3_600_000)
	if r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", user("late"), nil); r.status != http.StatusConflict || r.errorCode(t) != queue.CodeEventClosed {
		t.Fatalf("join after closesAt: %d %s", r.status, r.body)
	}
}

func TestScheduleValidation(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	ev := testenv.EventID(t)
	future := time.Now().Add(time.Hour).UnixMilli()
	for _, tc := range []struct{ body, code string }{
		{fmt.Sprintf(`{"capacity":5,"opensAt":%d}`, time.Now().Add(-time.Minute).UnixMilli()), "invalid_config"},
		{`{"capacity":5,"opensAt":-1}`, "invalid_config"},
		{`{"capacity":5,"prequeueSeconds":60}`, "invalid_config"},
		{fmt.Sprintf(`{"capacity":5,"opensAt":%d,"prequeueSeconds":-1}`, future), "invalid_config"},
		{fmt.Sprintf(`{"capacity":5,"opensAt":%d,"prequeueSeconds":%d}`, future, queue.MaxPrequeueSeconds+1), "invalid_config"},
		{fmt.Sprintf(`{"capacity":5,"opensAt":%d,"closesAt":%d}`, future, future), "invalid_config"},
		{`{"capacity":5,"opensAt":"soon"}`, "invalid_config"},
	} {
		if r := e.putEvent(t, ev, tc.body); r.status != http.StatusBadRequest || string(r.errorCode(t)) != tc.code {
			t.Errorf("%s: %d %s, want 400 %s", tc.body, r.status, r.body, tc.code)
		}
	}
	// Before the pre-queue the opening may move; the seed stays.
	r := e.putEvent(t, ev, fmt.Sprintf(`{"capacity":5,"opensAt":%d,"prequeueSeconds":60}`, future))
	var a, b queue.EventStatus
	_ = json.Unmarshal(r.body, &a)
	r = e.putEvent(t, ev, fmt.Sprintf(`{"opensAt":%d}`, future+60_000))
	_ = json.Unmarshal(r.body, &b)
	if r.status != http.StatusOK || b.OpensAt != future+60_000 || b.Draw == nil || a.Draw == nil || b.Draw.Commitment != a.Draw.Commitment {
		t.Fatalf("moving a drop before its pre-queue: %d %s", r.status, r.body)
	}
	// Removing the schedule opens the event; the draw's commitment stays.
	r = e.putEvent(t, ev, `{"opensAt":0}`)
	b = queue.EventStatus{}
	_ = json.Unmarshal(r.body, &b)
	if r.status != http.StatusOK || b.Phase != queue.PhaseOpen || b.PrequeueSeconds != 0 || b.Draw == nil || b.Draw.Commitment != a.Draw.Commitment {
		t.Fatalf("removing the schedule: %d %s", r.status, r.body)
	}
}

func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

func TestTargetURLValidation(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	ev := testenv.EventID(t)
	for _, bad := range []string{"javascript:alert(1)", "ftp://shop.example/", "//shop.example/sale", "/sale", "https://user:pw@shop.example/", "https://", "https://shop.example/" + strings.Repeat("x", queue.MaxTargetURLLength)} {
		if r := e.putEvent(t, ev, fmt.Sprintf(`{"capacity":5,"targetUrl":%q}`, bad)); r.status != http.StatusBadRequest || r.errorCode(t) != queue.CodeInvalidConfig {
			t.Errorf("targetUrl %q: %d %s", bad, r.status, r.body)
		}
	}
	r := e.putEvent(t, ev, `{"capacity":5,"targetUrl":"https://shop.example/sale?from=waitq"}`)
	var st queue.EventStatus
	if err := json.Unmarshal(r.body, &st); err != nil || r.status != http.StatusCreated || st.TargetURL != "https://shop.example/sale?from=waitq" {
		t.Fatalf("a good targetUrl: %d %s", r.status, r.body)
	}
	r = e.putEvent(t, ev, `{"targetUrl":""}`)
	st = queue.EventStatus{}
	if err := json.Unmarshal(r.body, &st); err != nil || r.status != http.StatusOK || st.TargetURL != "" {
		t.Fatalf("removing the targetUrl: %d %s", r.status, r.body)
	}
}

// TestAdaptiveEventMetricsShowTheTarget: an adaptive event's target p95 is
// exported next to its ceiling, so a dashboard can draw the shop's p95
// against it, and every event's capacity its holders; an event without a schedule has no opening.
func TestAdaptiveEventMetricsShowTheTarget(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	reg := prometheus.NewRegistry()
	e := startAPIWith(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken}, func(d *producer.Deps) { d.Registry = reg })
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":10,"admitPerMinute":600,"adaptive":{"targetLatencyMs":400}}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	metrics := scrape(t, reg)
	for _, want := range []string{
		fmt.Sprintf(`waitq_event_health_target_p95_seconds{event=%q} 0.4`, ev),
		fmt.Sprintf(`waitq_event_admit_ceiling_per_minute{event=%q} 600`, ev),
		fmt.Sprintf(`waitq_event_capacity{event=%q} 10`, ev),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, metrics)
		}
	}
	if strings.Contains(metrics, fmt.Sprintf(`waitq_event_opens_at_seconds{event=%q}`, ev)) {
		t.Errorf("an unscheduled event has an opening:\n%s", metrics)
	}
}

package guard_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/contract"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

const healthToken = "report-token-0123456789"

// receiver is producer-api's health route as far as the guard sees it: it
// checks the token, decodes and validates each report, and passes it on;
// refuse makes it answer 401 instead.
type receiver struct {
	*httptest.Server
	reports chan queue.HealthReport
	refuse  atomic.Bool
	posts   atomic.Int64
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{reports: make(chan queue.HealthReport, 100)}
	rc.Server = httptest.NewServer(contract.Producer(t).Handler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.posts.Add(1)
		fail := func(status int, code, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
		}
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/v1/admin/events/"+event+"/health":
			fail(http.StatusNotFound, "event_not_found", r.Method+" "+r.URL.Path)
			return
		case rc.refuse.Load() || r.Header.Get("Authorization") != "Bearer "+healthToken:
			fail(http.StatusUnauthorized, "unauthorized", "a valid token is required")
			return
		case r.Header.Get("Content-Type") != "application/json":
			fail(http.StatusBadRequest, "invalid_body", "not JSON")
			return
		}
		var h queue.HealthReport
		dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&h); err != nil {
			fail(http.StatusBadRequest, "invalid_body", err.Error())
			return
		}
		if err := h.Validate(); err != nil {
			fail(http.StatusBadRequest, "invalid_body", err.Error())
			return
		}
		select {
		case rc.reports <- h:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	})))
	t.Cleanup(rc.Close)
	return rc
}

// runReports runs the guard's report loop against rc until the test ends.
func runReports(t *testing.T, f *fixture, cfg guard.ReportConfig) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.guard.ReportHealth(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ReportHealth: %v", err)
		}
	})
}

// metricValue returns the value of the series line (name and labels) in the
// guard's metrics, -1 when it is missing.
func metricValue(t *testing.T, f *fixture, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(f.metrics(t))
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", series, err)
	}
	return v
}

// TestGateReportsTheOriginsHealth drives slow, failing and fast answers of
// a real origin through the guard, and beside them requests that must not
// count (bypassed paths, the guard's own routes, visitors sent to the line),
// and reads what a producer-like receiver gets.
func TestGateReportsTheOriginsHealth(t *testing.T) {
	f := newFixture(t, func(c *guard.Config) { c.HealthWindow = time.Minute })
	cookie := "waitq_entry_" + event + "=" + f.token("alice")
	guarded := map[string]int{"/product/1": 14, "/cart": 2, "/boom": 2, "/slow": 2}
	for p, n := range guarded {
		for range n {
			f.do(t, http.MethodGet, p, cookie)
		}
	}
	// None of these reach the origin through the guard.
	for _, req := range []struct{ path, cookie string }{
		{"/static/shop.css", ""}, {"/healthz", cookie}, {"/favicon.ico", ""}, // bypassed
		{guard.AdminPrefix + "healthz", ""}, {guard.AdminPrefix + "metrics", ""}, // the guard's own
		{"/product/1", ""}, {"/static/../boom", ""}, {"/boom?waitq_token=garbage", ""}, // sent to the line
	} {
		f.do(t, http.MethodGet, req.path, req.cookie)
	}

	rc := newReceiver(t)
	runReports(t, f, guard.ReportConfig{URL: rc.URL + "/", Token: healthToken, Reporter: "guard-a", Interval: 20 * time.Millisecond})
	var r queue.HealthReport
	select {
	case r = <-rc.reports:
	case <-time.After(10 * time.Second):
		t.Fatal("no report reached the receiver")
	}
	if r.Reporter != "guard-a" || r.WindowMs != 60_000 || r.Load != nil {
		t.Fatalf("report %+v, want reporter guard-a, window 60000 ms, no load", r)
	}
	if r.Requests == nil || *r.Requests != 20 || r.ErrorRate == nil || *r.ErrorRate != 0.1 || r.P95Ms == nil {
		t.Fatalf("report %+v, want 20 requests with 2 errors", r)
	}
	// The p95 of 20 answers is the 19th fastest, one of the two slow ones:
	// the origin held each at least slowPage.
	if minP95 := float64(slowPage.Milliseconds()) * (1 - guard.LatencyResolution); *r.P95Ms < minP95 {
		t.Fatalf("p95 %.1f ms, want at least %.1f ms (the slow answers)", *r.P95Ms, minP95)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		ok := metricValue(t, f, `waitq_guard_health_reports_total{event="shop-sale",result="ok"}`)
		return ok >= 1, "ok reports: " + strconv.FormatFloat(ok, 'g', -1, 64)
	})
	if v := metricValue(t, f, `waitq_guard_health_error_ratio{event="shop-sale"}`); v != 0.1 {
		t.Errorf("error ratio gauge %v, want 0.1", v)
	}
	if v := metricValue(t, f, `waitq_guard_health_p95_seconds{event="shop-sale"}`); math.Abs(v-*r.P95Ms/1000) > 1e-9 {
		t.Errorf("p95 gauge %v s, reported %v ms", v, *r.P95Ms)
	}
	// (A report may fail: each POST waits at most the 20 ms interval.)
	if v := metricValue(t, f, `waitq_guard_health_reports_total{event="shop-sale",result="rejected"}`); v != 0 {
		t.Errorf("%v reports rejected", v)
	}
}

// TestRefusedReportsAreCountedAndLoggedOnce points the reports at a
// receiver that answers 401, then lets them in.
func TestRefusedReportsAreCountedAndLoggedOnce(t *testing.T) {
	f := newFixture(t, nil)
	rc := newReceiver(t)
	rc.refuse.Store(true)
	runReports(t, f, guard.ReportConfig{URL: rc.URL, Token: healthToken, Interval: 10 * time.Millisecond})
	const series = `waitq_guard_health_reports_total{event="shop-sale",result="rejected"}`
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		v := metricValue(t, f, series)
		return v >= 5, "rejected reports: " + strconv.FormatFloat(v, 'g', -1, 64)
	})
	// A lasting failure is logged once a minute, not once a report.
	msg := "the health token is not valid for event shop-sale"
	if n := strings.Count(f.logs.String(), msg); n < 1 || n >= 5 {
		t.Errorf("%q logged %d times for 5 or more refusals", msg, n)
	}
	rc.refuse.Store(false)
	select {
	case r := <-rc.reports:
		if !queue.ValidReporter(r.Reporter) || r.Reporter != guard.DefaultReporterName() {
			t.Errorf("reporter %q, want %q", r.Reporter, guard.DefaultReporterName())
		}
		if *r.Requests != 0 || r.P95Ms != nil || r.ErrorRate != nil {
			t.Errorf("an idle origin's report: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no report got through once the receiver took them")
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return strings.Contains(f.logs.String(), "health reports get through again"), "no recovery logged"
	})
}

func TestUnreachableReceiverCountsFailures(t *testing.T) {
	f := newFixture(t, nil)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	runReports(t, f, guard.ReportConfig{URL: down.URL, Token: healthToken, Interval: 10 * time.Millisecond})
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		v := metricValue(t, f, `waitq_guard_health_reports_total{event="shop-sale",result="failed"}`)
		return v >= 3, "failed reports: " + strconv.FormatFloat(v, 'g', -1, 64)
	})
	if n := strings.Count(f.logs.String(), "the health report did not reach producer-api"); n != 1 {
		t.Errorf("the failure was logged %d times, want once", n)
	}
}

func TestReportHealthRefusesBadConfig(t *testing.T) {
	f := newFixture(t, nil)
	for name, cfg := range map[string]guard.ReportConfig{
		"no URL":         {Token: healthToken},
		"not http":       {URL: "ftp://x", Token: healthToken},
		"no token":       {URL: "http://127.0.0.1:1"},
		"bad reporter":   {URL: "http://127.0.0.1:1", Token: healthToken, Reporter: "a b"},
		"long reporter":  {URL: "http://127.0.0.1:1", Token: healthToken, Reporter: strings.Repeat("a", 65)},
		"empty host URL": {URL: "http://", Token: healthToken},
	} {
		if err := f.guard.ReportHealth(context.Background(), cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSanitizeReporter(t *testing.T) {
	tests := []struct{ in, want string }{
		{"web-1.example.com-4242", "web-1.example.com-4242"},
		{"host name/with:odd_chars-7", "host-name-with:odd_chars-7"},
		{"héte-1", "h--te-1"},
		{"", "waitq-guard"},
		{strings.Repeat("h", 70) + "-123", strings.Repeat("h", 60) + "-123"},
	}
	for _, tc := range tests {
		got := guard.SanitizeReporter(tc.in)
		if got != tc.want || !queue.ValidReporter(got) {
			t.Errorf("SanitizeReporter(%q) = %q, want %q (valid)", tc.in, got, tc.want)
		}
	}
	if !queue.ValidReporter(guard.DefaultReporterName()) {
		t.Errorf("default name %q is not valid", guard.DefaultReporterName())
	}
}

// TestOriginTimeoutAnswers504 holds the origin's answer past the origin
// timeout: the visitor gets 504 and the health figures count an error.
func TestOriginTimeoutAnswers504(t *testing.T) {
	const timeout = 100 * time.Millisecond
	f := newFixture(t, func(c *guard.Config) { c.OriginTimeout = timeout })
	cookie := "waitq_entry_" + event + "=" + f.token("alice")
	if resp, body := f.do(t, http.MethodGet, "/hang", cookie); resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(body, "too long") {
		t.Fatalf("hung origin: %d %q, want 504", resp.StatusCode, body)
	}
	if resp, _ := f.do(t, http.MethodGet, "/product/1", cookie); resp.StatusCode != 200 {
		t.Fatalf("after the timeout: %d", resp.StatusCode)
	}
	h := f.guard.Health(time.Now())
	if *h.Requests != 2 || *h.ErrorRate != 0.5 || *h.P95Ms < float64(timeout.Milliseconds())*(1-guard.LatencyResolution) {
		t.Fatalf("health %d requests, error rate %v, p95 %v ms; want 2, 0.5, at least the timeout", *h.Requests, *h.ErrorRate, *h.P95Ms)
	}
	m := f.metrics(t)
	wantMetric(t, m, `waitq_guard_origin_responses_total{code="timeout",event="shop-sale"} 1`)
	wantMetric(t, m, `waitq_guard_origin_responses_total{code="2xx",event="shop-sale"} 1`)
	if !strings.Contains(f.logs.String(), "origin did not answer in time") {
		t.Error("the timeout was not logged")
	}
}

// TestVisitorsWhoLeaveAreNotCounted cancels a request the origin holds: the
// origin is not to blame, so the health figures leave it out.
func TestVisitorsWhoLeaveAreNotCounted(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/hang", nil)
	req.Header.Set("Cookie", "waitq_entry_"+event+"="+f.token("alice"))
	errc := make(chan error, 1)
	go func() {
		resp, err := f.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	select {
	case <-f.origin.hung:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the origin")
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the canceled request got an answer")
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		v := metricValue(t, f, `waitq_guard_origin_responses_total{code="error",event="shop-sale"}`)
		return v == 1, "origin errors: " + strconv.FormatFloat(v, 'g', -1, 64)
	})
	if h := f.guard.Health(time.Now()); *h.Requests != 0 {
		t.Fatalf("the visitor who left counted: %+v", h)
	}
}

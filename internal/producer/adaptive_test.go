package producer_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

func (e *apiEnv) status(t *testing.T, ev string) queue.EventStatus {
	t.Helper()
	r := e.do(t, http.MethodGet, "/v1/admin/events/"+ev, admin(), nil)
	var st queue.EventStatus
	if err := json.Unmarshal(r.body, &st); err != nil || r.status != http.StatusOK {
		t.Fatalf("get %s: %d %s", ev, r.status, r.body)
	}
	return st
}

func (e *apiEnv) report(t *testing.T, ev, token, body string) reply {
	t.Helper()
	return e.do(t, http.MethodPost, "/v1/admin/events/"+ev+"/health",
		map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}, strings.NewReader(body))
}

// TestAdaptiveSettingsThroughTheAdminAPI: an adaptive object turns the
// controller on with defaults filled, absent keeps it, null turns it off;
// bad settings are refused with invalid_config and change nothing.
func TestAdaptiveSettingsThroughTheAdminAPI(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	ev := testenv.EventID(t)
	r := e.putEvent(t, ev, `{"capacity":100,"admitPerMinute":600,"adaptive":{"targetLatencyMs":400}}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	want := queue.Adaptive{TargetLatencyMs: 400}.WithDefaults(600)
	if st := e.status(t, ev); st.Adaptive == nil || *st.Adaptive != want || st.Control == nil {
		t.Fatalf("adaptive = %+v, control %+v; want %+v", st.Adaptive, st.Control, want)
	}
	if want.StartAdmitPerMinute != 60 || want.IncreasePerStep != 12 || want.OnSignalLoss != queue.SignalLossStop {
		t.Fatalf("defaults for a ceiling of 600: %+v", want)
	}
	for _, bad := range []string{
		`{"adaptive":{"targetLatencyMs":0}}`,
		`{"adaptive":{"targetLatencyMs":400,"decreaseFactor":1.5}}`,
		`{"adaptive":{"targetLatencyMs":400,"startAdmitPerMinute":601}}`,
		`{"adaptive":{"targetLatencyMs":400,"onSignalLoss":"panic"}}`,
		`{"adaptive":{"targetLatencyMs":400,"stepMs":5000,"signalTimeoutSeconds":2}}`,
		`{"adaptive":{"targetLatencyMs":400,"surprise":1}}`,
		`{"adaptive":[1]}`,
		`{"admitPerMinute":0}`, // an adaptive event needs its ceiling
		`{"reportToken":"short"}`,
	} {
		if r := e.putEvent(t, ev, bad); r.status != http.StatusBadRequest || r.errorCode(t) != queue.CodeInvalidConfig {
			t.Errorf("PUT %s: %d %s, want 400 invalid_config", bad, r.status, r.body)
		}
	}
	if r := e.putEvent(t, ev, `{"capacity":50}`); r.status != http.StatusOK {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	if st := e.status(t, ev); st.Adaptive == nil || *st.Adaptive != want {
		t.Fatalf("an update without adaptive changed it to %+v", st.Adaptive)
	}
	if r := e.putEvent(t, ev, `{"adaptive":null}`); r.status != http.StatusOK {
		t.Fatalf("turn off: %d %s", r.status, r.body)
	}
	if st := e.status(t, ev); st.Adaptive != nil || st.Control != nil {
		t.Fatalf("adaptive still on: %+v %+v", st.Adaptive, st.Control)
	}
	token := strings.Repeat("t", 40)
	if r := e.putEvent(t, ev, `{"reportToken":"`+token+`"}`); r.status != http.StatusOK {
		t.Fatalf("set token: %d %s", r.status, r.body)
	}
	if st := e.status(t, ev); st.ReportToken != token {
		t.Fatalf("report token %q, want %q", st.ReportToken, token)
	}
}

// TestHealthReportsNeedTheEventsToken: the event's report token and the
// admin token are taken; another event's token, a forged one or none is
// refused with 401 (and nothing is kept); bad bodies get 400.
func TestHealthReportsNeedTheEventsToken(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	ev, other := testenv.EventID(t), testenv.EventID(t)+"-other"
	for _, id := range []string{ev, other} {
		if r := e.putEvent(t, id, `{"capacity":10,"admitPerMinute":60,"adaptive":{"targetLatencyMs":300}}`); r.status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", id, r.status, r.body)
		}
	}
	token, otherToken := e.status(t, ev).ReportToken, e.status(t, other).ReportToken
	good := `{"reporter":"guard-a","windowMs":10000,"requests":120,"p95Ms":180.5,"errorRate":0.01}`

	refused := []struct{ name, token string }{
		{"no token", ""},
		{"other event's token", otherToken},
		{"forged token", token[:len(token)-1] + "x"},
	}
	for _, c := range refused {
		if r := e.report(t, ev, c.token, good); r.status != http.StatusUnauthorized || r.errorCode(t) != queue.CodeUnauthorized {
			t.Errorf("%s: %d %s, want 401", c.name, r.status, r.body)
		}
	}
	if r := e.report(t, ev+"-nope", token, good); r.status != http.StatusUnauthorized {
		t.Errorf("unknown event with a report token: %d %s, want 401", r.status, r.body)
	}
	if r := e.report(t, ev+"-nope", adminToken, good); r.status != http.StatusNotFound || r.errorCode(t) != queue.CodeEventNotFound {
		t.Errorf("unknown event with the admin token: %d %s, want 404", r.status, r.body)
	}
	if st := e.status(t, ev); len(st.Health) != 0 {
		t.Fatalf("refused reports were kept: %+v", st.Health)
	}

	for _, bad := range []string{
		`{}`,
		`{"p95Ms":-1}`,
		`{"errorRate":1.5}`,
		`{"load":"high"}`,
		`{"reporter":"a b","load":0.5}`,
		`{"windowMs":-5,"load":0.5}`,
		`{"load":0.5,"extra":true}`,
		`not json`,
	} {
		if r := e.report(t, ev, token, bad); r.status != http.StatusBadRequest || r.errorCode(t) != queue.CodeInvalidBody {
			t.Errorf("report %s: %d %s, want 400 invalid_body", bad, r.status, r.body)
		}
	}

	if r := e.report(t, ev, token, good); r.status != http.StatusNoContent {
		t.Fatalf("report with the event's token: %d %s", r.status, r.body)
	}
	if r := e.report(t, ev, adminToken, `{"reporter":"shop","load":0.4}`); r.status != http.StatusNoContent {
		t.Fatalf("report with the admin token: %d %s", r.status, r.body)
	}
	st := e.status(t, ev)
	if len(st.Health) != 2 {
		t.Fatalf("health = %+v, want the two reporters", st.Health)
	}
	byName := map[string]queue.ReporterHealth{}
	for _, h := range st.Health {
		byName[h.Reporter] = h
	}
	if g := byName["guard-a"]; g.P95Ms == nil || *g.P95Ms != 180.5 || *g.Requests != 120 || g.WindowMs != 10000 || g.At == 0 {
		t.Errorf("guard-a's report = %+v", g)
	}
	if s := byName["shop"]; s.Load == nil || *s.Load != 0.4 || s.P95Ms != nil {
		t.Errorf("shop's report = %+v", s)
	}
	if o := e.status(t, other); len(o.Health) != 0 {
		t.Errorf("the other event got reports: %+v", o.Health)
	}
}

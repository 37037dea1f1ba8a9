package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/entry"
)

// testReportToken is the report token of startArrivals' event: the
// reporters' credential.
const testReportToken = "test-report-token-0123456789abcdef"

// startArrivals runs a gateway over an event with an arrival window of 10
// s, its report token testReportToken, and a second event with a report
// token of its own.
func startArrivals(t *testing.T) (holdEnv, string) {
	t.Helper()
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	other := ev + "x"
	for id, token := range map[string]string{ev: testReportToken, other: "other-report-token-0123456789abcdef"} {
		e := sys.CreateEvent(id, 100, 1)
		e.ReportToken, e.ArrivalSeconds = token, 10
		if _, err := sys.Store.PutEvent(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	return holdEnv{startGateway(t, sys, gateway.Config{}, nil), ev}, other
}

// TestArrivalsTakeTheReportTokenAndTheCurrentAdmission: an arrival is
// marked only when the event's report token comes with a valid token of
// the user's current admission; every other report is a 4xx JSON answer
// that marks nothing, so a forged arrival cannot keep a no-show's slot.
func TestArrivalsTakeTheReportTokenAndTheCurrentAdmission(t *testing.T) {
	t.Parallel()
	h, other := startArrivals(t)
	ctx := context.Background()
	path := "/v1/events/" + h.ev + "/arrivals"
	alice := h.admit(t, "alice", time.Minute)
	body := `{"token":"` + alice + `"}`
	now := h.clock.Now().UnixMilli()
	sign := func(ev string, until int64) string {
		return h.entry.Sign(entry.Token{EventID: ev, UserID: "alice", Expires: until, IssuedAt: now})
	}
	otherKeys, err := entry.DerivedKeyring("another secret of at least thirty-two bytes", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, body, bearer string
		status                   int
		code                     queue.Code
	}{
		{"no credential", path, body, "", 401, queue.CodeUnauthorized},
		{"a wrong credential", path, body, testReportToken[:len(testReportToken)-1] + "X", 401, queue.CodeUnauthorized},
		{"the visitor's own token", path, body, alice, 401, queue.CodeUnauthorized},
		{"another event's report token", path, body, "other-report-token-0123456789abcdef", 401, queue.CodeUnauthorized},
		{"an unknown event", "/v1/events/nosuchevent/arrivals", body, testReportToken, 401, queue.CodeUnauthorized},
		{"a bad event id", "/v1/events/a%20b/arrivals", body, testReportToken, 400, queue.CodeInvalidEventID},
		{"no body", path, `{}`, testReportToken, 401, queue.CodeInvalidTicket},
		{"not JSON", path, `{"token":`, testReportToken, 400, queue.CodeInvalidBody},
		{"a forged token", path, `{"token":"` + alice[:len(alice)-4] + `AAAA"}`, testReportToken, 401, queue.CodeInvalidTicket},
		{"another key's token", path, `{"token":"` + otherKeys.Sign(entry.Token{EventID: h.ev, UserID: "alice", Expires: now + 60_000, IssuedAt: now}) + `"}`, testReportToken, 401, queue.CodeInvalidTicket},
		{"an expired token", path, `{"token":"` + sign(h.ev, now-10_000) + `"}`, testReportToken, 401, queue.CodeInvalidTicket},
		{"another event's token", path, `{"token":"` + sign(other, now+60_000) + `"}`, testReportToken, 401, queue.CodeInvalidTicket},
		{"not the current admission", path, `{"token":"` + sign(h.ev, now+30_000) + `"}`, testReportToken, 409, queue.CodeNotAdmitted},
	} {
		code, b := h.call(t, "POST", tc.path, tc.body, tc.bearer)
		if code != tc.status || errCode(b) != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, code, b, tc.status, tc.code)
		}
	}
	c := h.sys.Store.Client()
	if n := c.ZCard(ctx, redisstore.ArrivedKey(h.ev)).Val(); n != 0 {
		t.Fatalf("%d arrivals marked by refused reports", n)
	}
	for range 2 {
		if code, b := h.call(t, "POST", path, body, testReportToken); code != 200 || strings.TrimSpace(string(b)) != `{"arrived":true}` {
			t.Fatalf("the reporter's arrival: %d %s", code, b)
		}
	}
	if n, _ := c.HGet(ctx, redisstore.StatsKey(h.ev), "arrivedTotal").Int(); n != 1 {
		t.Fatalf("arrivedTotal %d, want 1", n)
	}
	if got := scrape(t, h.gwEnv); !strings.Contains(got, `waitq_arrivals_total{event="`+h.ev+`"} 1`) {
		t.Errorf("metrics lack one arrival of %s", h.ev)
	}
	// After a release the token's admission is not current any more.
	if code, _ := h.call(t, "POST", "/v1/events/"+h.ev+"/release", body, ""); code != 200 {
		t.Fatalf("release: %d", code)
	}
	if code, b := h.call(t, "POST", path, body, testReportToken); code != 409 || errCode(b) != queue.CodeNotAdmitted {
		t.Fatalf("arrival after the release: %d %s, want 409 not_admitted", code, b)
	}
}

// TestANoShowIsCountedOnTheMetrics: the monitor frees the slot of an
// admission not arrived within the window and counts it by event.
func TestANoShowIsCountedOnTheMetrics(t *testing.T) {
	t.Parallel()
	h, _ := startArrivals(t)
	h.admit(t, "bob", time.Minute)
	h.clock.Add(50 * time.Second) // admitted 10 s ago by the hold's end: the window closed
	h.gw.MonitorTick(context.Background())
	if n := h.sys.Store.Client().ZCard(context.Background(), redisstore.HoldersKey(h.ev)).Val(); n != 0 {
		t.Fatalf("%d holders after the window, want bob's slot freed", n)
	}
	if got := scrape(t, h.gwEnv); !strings.Contains(got, `waitq_no_shows_total{event="`+h.ev+`"} 1`) {
		t.Errorf("metrics lack one no-show of %s", h.ev)
	}
}

// scrape returns the gateway's /metrics text.
func scrape(t *testing.T, e *gwEnv) string {
	t.Helper()
	resp, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

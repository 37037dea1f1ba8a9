package producer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/contract"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

const adminToken = "test-admin-token"

// loopback are the trusted proxies of the tests in trust mode: the test
// client stands where the authenticating proxy would.
var loopback = []string{"127.0.0.1", "::1"}

type apiEnv struct {
	sys     *testsys.System
	srv     *httptest.Server
	tickets *queue.TicketSigner
}

func startAPI(t *testing.T, sys *testsys.System, cfg producer.Config) *apiEnv {
	t.Helper()
	return startAPIAt(t, sys, cfg, nil)
}

// startAPIAt is startAPI with the server's clock (nil: the real one).
func startAPIAt(t *testing.T, sys *testsys.System, cfg producer.Config, now func() time.Time) *apiEnv {
	t.Helper()
	return startAPIWith(t, sys, cfg, func(d *producer.Deps) { d.Now = now })
}

// startAPIWith is startAPI with its dependencies changed by mod (a clock, a
// registry, a logger) before the server is built.
func startAPIWith(t *testing.T, sys *testsys.System, cfg producer.Config, mod func(*producer.Deps)) *apiEnv {
	t.Helper()
	tickets, err := queue.NewTicketSigner("test-secret")
	if err != nil {
		t.Fatal(err)
	}
	deps := producer.Deps{
		Store: sys.Store, Topics: sys.Pub.Admin(), Publisher: sys.Pub, Tickets: tickets,
		Logger: testenv.Logger(t),
	}
	mod(&deps)
	s, err := producer.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(contract.Producer(t).Handler(t, s))
	t.Cleanup(srv.Close)
	return &apiEnv{sys: sys, srv: srv, tickets: tickets}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) errorCode(t *testing.T) queue.Code {
	t.Helper()
	var b httpkit.ErrorBody
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("error body %q is not the contract's JSON: %v", r.body, err)
	}
	if b.Error.Message == "" {
		t.Errorf("error body %s has no message", r.body)
	}
	return b.Error.Code
}

func (e *apiEnv) do(t *testing.T, method, path string, hdr map[string]string, body io.Reader) reply {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func admin(extra ...string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + adminToken}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

func user(id string) map[string]string { return map[string]string{httpkit.UserHeader: id} }

func (e *apiEnv) putEvent(t *testing.T, id, body string) reply {
	t.Helper()
	return e.do(t, http.MethodPut, "/v1/admin/events/"+id, admin("Content-Type", "application/json"), strings.NewReader(body))
}

func TestJoinIsAcknowledgedAndReachesTheLine(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	sys.StartConsumer(sys.ConsumerConfig())
	ev := testenv.EventID(t)

	if r := e.putEvent(t, ev, `{"capacity":5,"staySeconds":120,"partitions":2}`); r.status != http.StatusCreated {
		t.Fatalf("create event: %d %s", r.status, r.body)
	}
	before := time.Now().UnixMilli()
	r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", user("alice@example.com"), nil)
	if r.status != http.StatusAccepted {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	var j producer.JoinResponse
	if err := json.Unmarshal(r.body, &j); err != nil {
		t.Fatal(err)
	}
	if j.EventID != ev || j.UserID != "alice@example.com" || j.JoinedAt < before || j.JoinedAt > time.Now().UnixMilli() {
		t.Errorf("join response %+v", j)
	}
	tk, err := e.tickets.Verify(j.Ticket, ev, time.Now())
	if err != nil || tk.UserID != "alice@example.com" || tk.JoinedAt != j.JoinedAt {
		t.Errorf("ticket %q: %+v, %v", j.Ticket, tk, err)
	}
	if !strings.HasPrefix(j.StatusURL, "/queue-status/"+ev+"?ticket=") {
		t.Errorf("statusUrl = %q", j.StatusURL)
	}
	// The acknowledged join reaches the line with the stamp as its score.
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		line := sys.Waiting(ev)
		return len(line) == 1 && line[0] == testsys.WaitingUser{User: "alice@example.com", TS: j.JoinedAt}, fmt.Sprintf("line %v", line)
	})

	// A repeated join is accepted and keeps the first place.
	time.Sleep(5 * time.Millisecond)
	if r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", user("alice@example.com"), nil); r.status != http.StatusAccepted {
		t.Fatalf("rejoin: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", user("bob"), nil); r.status != http.StatusAccepted {
		t.Fatalf("join bob: %d %s", r.status, r.body)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		line := sys.Waiting(ev)
		return len(line) == 2 && line[0] == testsys.WaitingUser{User: "alice@example.com", TS: j.JoinedAt} && line[1].User == "bob", fmt.Sprintf("line %v", line)
	})

	// Leave removes the user.
	if r := e.do(t, http.MethodDelete, "/v1/events/"+ev+"/queue", user("alice@example.com"), nil); r.status != http.StatusAccepted {
		t.Fatalf("leave: %d %s", r.status, r.body)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		line := sys.Waiting(ev)
		return len(line) == 1 && line[0].User == "bob", fmt.Sprintf("line %v", line)
	})

	// The admin view counts the line.
	r = e.do(t, http.MethodGet, "/v1/admin/events/"+ev, admin(), nil)
	var st queue.EventStatus
	if err := json.Unmarshal(r.body, &st); err != nil || r.status != http.StatusOK {
		t.Fatalf("get event: %d %s", r.status, r.body)
	}
	// Both joins were written: the ingest delay counts them.
	if st.Fairness.IngestDelayMs.Count != 2 || st.Fairness.Inversions != 0 {
		t.Errorf("fairness = %+v, want 2 delays counted and no inversion", st.Fairness)
	}
	// Every event gets a report token and a shop token at creation.
	if err := queue.CheckReportToken(st.ReportToken); err != nil {
		t.Errorf("report token %q: %v", st.ReportToken, err)
	}
	if err := queue.CheckShopToken(st.ShopToken); err != nil || st.ShopToken == st.ReportToken {
		t.Errorf("shop token %q: %v", st.ShopToken, err)
	}
	want := queue.EventStatus{Event: queue.Event{ID: ev, Capacity: 5, StaySeconds: 120, State: queue.StateOpen, Partitions: 2, ReportToken: st.ReportToken, ShopToken: st.ShopToken,
		Away: queue.DefaultAway()}, // an event created through the API keeps places while away
		Phase: queue.PhaseOpen, Waiting: 1, Fairness: st.Fairness, Turns: &queue.Turns{}}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("event status = %+v, want %+v", st, want)
	}
	var raw map[string]any
	_ = json.Unmarshal(r.body, &raw)
	for _, k := range []string{"eventId", "capacity", "staySeconds", "state", "phase", "waiting", "holders", "active", "admittedTotal", "fairness"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("event JSON lacks %q: %s", k, r.body)
		}
	}
}

func TestHTTPErrors(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	ev := testenv.EventID(t)
	closed := ev + "-closed"
	held := ev + "-held"
	for _, id := range []string{ev, held} {
		if r := e.putEvent(t, id, `{"capacity":5}`); r.status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", id, r.status, r.body)
		}
	}
	if r := e.putEvent(t, closed, `{"capacity":5,"state":"closed"}`); r.status != http.StatusCreated {
		t.Fatalf("create closed: %d %s", r.status, r.body)
	}
	paused := ev + "-paused"
	if r := e.putEvent(t, paused, `{"capacity":5,"state":"paused"}`); r.status != http.StatusCreated {
		t.Fatalf("create paused: %d %s", r.status, r.body)
	}
	// Someone holds a slot of "held" for another minute.
	if err := sys.Store.Client().ZAdd(context.Background(), redisstore.HoldersKey(held),
		redis.Z{Member: "holder", Score: float64(time.Now().Add(time.Minute).UnixMilli())}).Err(); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 5<<10)
	adminBig := strings.Repeat("x", producer.AdminMaxBodyBytes+1)
	q := "/v1/events/" + ev + "/queue"
	tests := []struct {
		name         string
		method, path string
		hdr          map[string]string
		body         io.Reader
		status       int
		code         queue.Code
	}{
		{"bad event id", "POST", "/v1/events/bad.id/queue", user("u"), nil, 400, queue.CodeInvalidEventID},
		{"event id too long", "POST", "/v1/events/" + strings.Repeat("e", 65) + "/queue", user("u"), nil, 400, queue.CodeInvalidEventID},
		{"missing user", "POST", q, nil, nil, 401, queue.CodeMissingUserID},
		{"bad user id", "POST", q, user("a b"), nil, 400, queue.CodeInvalidUserID},
		{"user id too long", "POST", q, user(strings.Repeat("u", 129)), nil, 400, queue.CodeInvalidUserID},
		{"unknown event", "POST", "/v1/events/" + ev + "-nope/queue", user("u"), nil, 404, queue.CodeEventNotFound},
		{"unknown event leave", "DELETE", "/v1/events/" + ev + "-nope/queue", user("u"), nil, 404, queue.CodeEventNotFound},
		{"closed event", "POST", "/v1/events/" + closed + "/queue", user("u"), nil, 409, queue.CodeEventClosed},
		{"leave closed event", "DELETE", "/v1/events/" + closed + "/queue", user("u"), nil, 202, ""},
		{"paused event keeps taking joins", "POST", "/v1/events/" + paused + "/queue", user("u"), nil, 202, ""},
		{"body too large", "POST", q, user("u"), strings.NewReader(big), 413, queue.CodeBodyTooLarge},
		{"admin no token", "GET", "/v1/admin/events", nil, nil, 401, queue.CodeUnauthorized},
		{"admin wrong token", "GET", "/v1/admin/events", map[string]string{"Authorization": "Bearer nope"}, nil, 401, queue.CodeUnauthorized},
		{"admin token prefix", "GET", "/v1/admin/events", map[string]string{"Authorization": "Bearer " + adminToken[:4]}, nil, 401, queue.CodeUnauthorized},
		{"admin basic auth", "GET", "/v1/admin/events", map[string]string{"Authorization": "Basic " + adminToken}, nil, 401, queue.CodeUnauthorized},
		{"put not json", "PUT", "/v1/admin/events/x", admin(), strings.NewReader("capacity=3"), 400, queue.CodeInvalidConfig},
		{"put unknown field", "PUT", "/v1/admin/events/x", admin(), strings.NewReader(`{"capacity":3,"capactiy":4}`), 400, queue.CodeInvalidConfig},
		{"put two objects", "PUT", "/v1/admin/events/x", admin(), strings.NewReader(`{"capacity":3}{}`), 400, queue.CodeInvalidConfig},
		{"put no capacity", "PUT", "/v1/admin/events/x", admin(), strings.NewReader(`{}`), 400, queue.CodeInvalidConfig},
		{"put zero capacity", "PUT", "/v1/admin/events/x", admin(), strings.NewReader(`{"capacity":0}`), 400, queue.CodeInvalidConfig},
		{"put negative hold", "PUT", "/v1/admin/events/x", admin(), strings.NewReader(`{"capacity":1,"staySeconds":-1}`), 400, queue.CodeInvalidConfig},
		{"put negative rate", "PUT", "/v1/admin/events/x", admin(), strings.NewReader(`{"capacity":1,"admitPerMinute":-1}`), 400, queue.CodeInvalidConfig},
		{"put huge rate", "PUT", "/v1/admin/events/x", admin(), strings.NewReader(`{"capacity":1,"admitPerMinute":1000001}`), 400, queue.CodeInvalidConfig},
		{"put rate not a number", "PUT", "/v1/admin/events/x", admin(), strings.NewReader(`{"capacity":1,"admitPerMinute":"fast"}`), 400, queue.CodeInvalidConfig},
		{"put bad state", "PUT", "/v1/admin/events/x", admin(), strings.NewReader(`{"capacity":1,"state":"asleep"}`), 400, queue.CodeInvalidConfig},
		{"put too many partitions", "PUT", "/v1/admin/events/x", admin(), strings.NewReader(`{"capacity":1,"partitions":100000}`), 400, queue.CodeInvalidConfig},
		{"put changes partitions", "PUT", "/v1/admin/events/" + ev, admin(), strings.NewReader(`{"partitions":7}`), 400, queue.CodeInvalidConfig},
		{"put bad id", "PUT", "/v1/admin/events/a%20b", admin(), strings.NewReader(`{"capacity":1}`), 400, queue.CodeInvalidEventID},
		// The admin API takes up to 64 KiB (an event's page).
		{"put body too large", "PUT", "/v1/admin/events/x", admin(), strings.NewReader(adminBig), 413, queue.CodeBodyTooLarge},
		{"put chunked body too large", "PUT", "/v1/admin/events/x", admin(), io.MultiReader(strings.NewReader(adminBig)), 413, queue.CodeBodyTooLarge},
		{"get unknown", "GET", "/v1/admin/events/" + ev + "-nope", admin(), nil, 404, queue.CodeEventNotFound},
		{"delete unknown", "DELETE", "/v1/admin/events/" + ev + "-nope", admin(), nil, 404, queue.CodeEventNotFound},
		{"delete with slots held", "DELETE", "/v1/admin/events/" + held, admin(), nil, 409, queue.CodeSlotsInUse},
		{"unknown route", "GET", "/v2/nothing", nil, nil, 404, queue.CodeNotFound},
		{"wrong method", "PATCH", q, user("u"), nil, 405, queue.CodeMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, tc.method, tc.path, tc.hdr, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.code == "" {
				return
			}
			if got := r.errorCode(t); got != tc.code {
				t.Errorf("code %q, want %q", got, tc.code)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("content type %q", ct)
			}
			if tc.status == 401 && tc.code == queue.CodeUnauthorized && r.header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	// Nothing above may have created an event.
	if r := e.do(t, "GET", "/v1/admin/events/x", admin(), nil); r.status != 404 {
		t.Errorf("a refused PUT created event x: %d %s", r.status, r.body)
	}
	// The refused delete changed nothing; once the hold expires it succeeds.
	if err := sys.Store.Client().ZAdd(context.Background(), redisstore.HoldersKey(held),
		redis.Z{Member: "holder", Score: float64(time.Now().Add(-time.Second).UnixMilli())}).Err(); err != nil {
		t.Fatal(err)
	}
	if r := e.do(t, "DELETE", "/v1/admin/events/"+held, admin(), nil); r.status != 204 {
		t.Fatalf("delete after expiry: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", "/v1/admin/events/"+held, admin(), nil); r.status != 404 {
		t.Fatalf("deleted event still readable: %d %s", r.status, r.body)
	}
	if n, _ := sys.Store.Client().Exists(context.Background(), redisstore.HoldersKey(held), redisstore.ConfigKey(held)).Result(); n != 0 {
		t.Errorf("%d keys of the deleted event remain", n)
	}
}

func TestAdminDisabledWithoutToken(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback})
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer "}} {
		r := e.do(t, "GET", "/v1/admin/events", h, nil)
		if r.status != 403 || r.errorCode(t) != queue.CodeAdminDisabled {
			t.Errorf("admin without a configured token: %d %s", r.status, r.body)
		}
	}
}

func TestAdminUpdateAndList(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":5}`); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	r := e.putEvent(t, ev, `{"capacity":9,"admitPerMinute":120,"state":"closed","partitions":3}`)
	if r.status != 200 {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	r = e.do(t, "GET", "/v1/admin/events", admin(), nil)
	var list producer.EventList
	if err := json.Unmarshal(r.body, &list); err != nil || r.status != 200 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	want := queue.Event{ID: ev, Capacity: 9, StaySeconds: producer.DefaultStaySeconds, AdmitPerMinute: 120, State: queue.StateClosed, Partitions: 3,
		Away: queue.DefaultAway()}
	if len(list.Events) == 1 {
		want.ReportToken = list.Events[0].ReportToken // made at creation, kept by the update
		want.ShopToken = list.Events[0].ShopToken
	}
	if len(list.Events) != 1 || list.Events[0].Event != want || want.ReportToken == "" {
		t.Fatalf("list = %+v, want one %+v", list.Events, want)
	}
	// The closed event refuses joins at once (the cache is invalidated).
	if r := e.do(t, "POST", "/v1/events/"+ev+"/queue", user("u"), nil); r.status != 409 {
		t.Fatalf("join after close: %d %s", r.status, r.body)
	}
	if r := e.do(t, "DELETE", "/v1/admin/events/"+ev, admin(), nil); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := e.do(t, "POST", "/v1/events/"+ev+"/queue", user("u"), nil); r.status != 404 {
		t.Fatalf("join after delete: %d %s", r.status, r.body)
	}
}

// TestOlderStaySpellingIsTaken: the admin PUT takes holdSeconds, the older
// spelling of staySeconds, when staySeconds is absent, and the GET answers
// staySeconds alone.
func TestOlderStaySpellingIsTaken(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	ev := testenv.EventID(t)
	for _, c := range []struct {
		body string
		want int
	}{{`{"capacity":5,"holdSeconds":42}`, 42}, {`{"holdSeconds":7,"staySeconds":9}`, 9}} {
		body, want := c.body, c.want
		if r := e.putEvent(t, ev, body); r.status != 201 && r.status != 200 {
			t.Fatalf("put %s: %d %s", body, r.status, r.body)
		}
		r := e.do(t, "GET", "/v1/admin/events/"+ev, admin(), nil)
		var got map[string]any
		if err := json.Unmarshal(r.body, &got); err != nil || got["staySeconds"] != float64(want) || got["holdSeconds"] != nil {
			t.Fatalf("after %s: %d %s, want staySeconds %d alone", body, r.status, r.body, want)
		}
	}
}

func TestBrokerThatHangsGets503WithinTheTimeout(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	const timeout = 500 * time.Millisecond
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken, PublishTimeout: timeout})
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":5}`); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	// Every produce request from now on is swallowed without an answer.
	sys.Kafka.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		sys.Kafka.KeepControl()
		return nil, nil, true
	})
	start := time.Now()
	r := e.do(t, "POST", "/v1/events/"+ev+"/queue", user("u"), nil)
	elapsed := time.Since(start)
	if r.status != 503 || r.errorCode(t) != queue.CodeBrokerUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("join with a hanging broker: %d %v %s", r.status, r.header, r.body)
	}
	// A liveness bound, not a speed target: the request must not hang.
	if elapsed > 10*timeout {
		t.Errorf("answered after %v with a publish timeout of %v", elapsed, timeout)
	}
}

func TestBrokerDownGets503AndNotReady(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Kafka: []kfake.Opt{}})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken, PublishTimeout: time.Second})
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":5}`); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", "/readyz", nil, nil); r.status != 200 {
		t.Fatalf("readyz with everything up: %d %s", r.status, r.body)
	}
	sys.Kafka.Close()
	r := e.do(t, "POST", "/v1/events/"+ev+"/queue", user("u"), nil)
	if r.status != 503 || r.errorCode(t) != queue.CodeBrokerUnavailable {
		t.Fatalf("join with the broker down: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", "/readyz", nil, nil); r.status != 503 {
		t.Fatalf("readyz with the broker down: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", "/healthz", nil, nil); r.status != 200 {
		t.Fatalf("healthz: %d %s", r.status, r.body)
	}
}

func TestRedisDownGets503AndNotReady(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	sys.Redis.Kill()
	r := e.do(t, "POST", "/v1/events/any/queue", user("u"), nil)
	if r.status != 503 || r.errorCode(t) != queue.CodeStoreUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("join with Redis down: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", "/readyz", nil, nil); r.status != 503 {
		t.Fatalf("readyz with Redis down: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", "/v1/admin/events", admin(), nil); r.status != 503 {
		t.Fatalf("admin list with Redis down: %d %s", r.status, r.body)
	}
}

// TestJoinsOutliveARedisOutage kills Redis after an event was read: joins
// go on into Kafka on the last known configuration for a while, then are
// refused; an event never read is refused at once.
func TestJoinsOutliveARedisOutage(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	e := startAPIAt(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken}, func() time.Time { return time.Unix(0, clock.Load()) })
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":5,"partitions":1}`); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if r := e.do(t, "POST", "/v1/events/"+ev+"/queue", user("before"), nil); r.status != 202 {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	sys.Redis.Kill()
	clock.Add(int64(time.Minute)) // long past the cache TTL: the store is asked, and fails
	for _, u := range []string{"during-1", "during-2"} {
		if r := e.do(t, "POST", "/v1/events/"+ev+"/queue", user(u), nil); r.status != 202 {
			t.Fatalf("join %s with Redis down on a known event: %d %s", u, r.status, r.body)
		}
	}
	if r := e.do(t, "POST", "/v1/events/other/queue", user("u"), nil); r.status != 503 || r.errorCode(t) != queue.CodeStoreUnavailable {
		t.Fatalf("join of an event never read, Redis down: %d %s", r.status, r.body)
	}
	clock.Add(int64(10 * time.Minute)) // past the stale limit
	if r := e.do(t, "POST", "/v1/events/"+ev+"/queue", user("late"), nil); r.status != 503 || r.errorCode(t) != queue.CodeStoreUnavailable {
		t.Fatalf("join long into the outage: %d %s", r.status, r.body)
	}
	// The joins accepted during the outage are in Kafka, for the consumer.
	msgs := sys.ReadTopic(ev, 3)
	if got := []string{msgs[1].UserID, msgs[2].UserID}; got[0] != "during-1" || got[1] != "during-2" {
		t.Fatalf("topic holds %+v", msgs)
	}
}

func TestMetricsCountAcceptedJoins(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	ev := testenv.EventID(t)
	e.putEvent(t, ev, `{"capacity":5}`)
	for _, u := range []string{"a", "b"} {
		if r := e.do(t, "POST", "/v1/events/"+ev+"/queue", user(u), nil); r.status != 202 {
			t.Fatalf("join: %d %s", r.status, r.body)
		}
	}
	e.do(t, "POST", "/v1/events/"+ev+"/queue", nil, nil)
	if r := e.do(t, "GET", "/openapi.yaml", nil, nil); r.status != 200 || !strings.HasPrefix(string(r.body), "openapi: 3") {
		t.Errorf("/openapi.yaml: %d %.40s", r.status, r.body)
	}
	r := e.do(t, "GET", "/metrics", nil, nil)
	for _, want := range []string{`waitq_queue_requests_total{op="join"} 2`, `waitq_http_errors_total{code="missing_user_id"} 1`, "waitq_publish_seconds_count 2"} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

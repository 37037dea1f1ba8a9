package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/entry"
)

func TestHandshakeRefusals(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startGateway(t, sys, fast, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	other, _ := queue.NewTicketSigner("some-other-secret-entirely")
	now := e.clock.Now()
	past := e.tickets.Sign(queue.Ticket{EventID: ev, UserID: "u", JoinedAt: now.Add(-2 * time.Hour).UnixMilli(), Expires: now.Add(-time.Hour).UnixMilli()})
	tests := []struct {
		name   string
		event  string
		ticket string
		hdr    http.Header
		code   websocket.StatusCode
	}{
		{"bad event id", "bad.id", e.ticket("bad.id", "u"), nil, httpkit.CloseInvalidEvent},
		{"event id too long", strings.Repeat("e", 65), "", nil, httpkit.CloseInvalidEvent},
		{"no identity", ev, "", nil, httpkit.CloseBadIdentity},
		{"forged ticket", ev, other.Sign(queue.Ticket{EventID: ev, UserID: "u", Expires: now.Add(time.Hour).UnixMilli()}), nil, httpkit.CloseBadIdentity},
		{"garbage ticket", ev, "v1.not-a-ticket", nil, httpkit.CloseBadIdentity},
		{"expired ticket", ev, past, nil, httpkit.CloseBadIdentity},
		{"ticket of another event", ev, e.ticket(ev+"-other", "u"), nil, httpkit.CloseBadIdentity},
		{"entry token as ticket", ev, e.entry.Sign(entry.Token{EventID: ev, UserID: "u", Expires: now.Add(time.Hour).UnixMilli()}), nil, httpkit.CloseBadIdentity},
		{"header without trust mode", ev, "", http.Header{httpkit.UserHeader: {"u"}}, httpkit.CloseBadIdentity},
		{"unknown event", ev + "-nope", e.ticket(ev+"-nope", "u"), nil, httpkit.CloseUnknownEvent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := e.dial(t, tc.event, tc.ticket, tc.hdr)
			if err != nil {
				t.Fatalf("handshake failed before the close code: %v", err)
			}
			if got := c.CloseCode(5 * time.Second); got != tc.code {
				t.Fatalf("close code %d, want %d", got, tc.code)
			}
		})
	}
	t.Run("foreign origin", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, resp, err := websocket.Dial(ctx, e.wsURL("/queue-status/"+ev+"?ticket="+e.ticket(ev, "u")),
			&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a foreign origin was not refused with 403: %v %v", resp, err)
		}
	})
}

func TestTrustedHeaderAndAllowedOrigin(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	cfg := fast
	cfg.TrustUserHeader, cfg.TrustedProxies = true, loopback
	cfg.AllowedOrigins = []string{"localhost:8089"}
	e := startGateway(t, sys, cfg, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.StartConsumer(sys.ConsumerConfig())
	sys.Join(ev, "locust-1", 100)
	c, err := e.dial(t, ev, "", http.Header{httpkit.UserHeader: {"locust-1"}, "Origin": {"http://localhost:8089"}})
	if err != nil {
		t.Fatal(err)
	}
	f := c.Status(waiting(1, 1), 10*time.Second)
	if f.UserID != "locust-1" || f.EventID != ev {
		t.Fatalf("status %+v", f)
	}
	bad, err := e.dial(t, ev, "", http.Header{httpkit.UserHeader: {"not valid!"}})
	if err != nil {
		t.Fatal(err)
	}
	if code := bad.CloseCode(5 * time.Second); code != httpkit.CloseBadIdentity {
		t.Fatalf("invalid header user: close %d", code)
	}
	// A visitor id is waitq's to issue: the header naming one would watch
	// (and take the entry token of) that visitor's place.
	visitor := "v:AAAAAAAAAAAAAAAAAAAAAA"
	sys.Join(ev, visitor, 200)
	stolen, err := e.dial(t, ev, "", http.Header{httpkit.UserHeader: {visitor}})
	if err != nil {
		t.Fatal(err)
	}
	if code := stolen.CloseCode(5 * time.Second); code != httpkit.CloseBadIdentity {
		t.Fatalf("X-User-Id naming a visitor: close %d", code)
	}
	if status, code := pollAs(t, e, ev, visitor); status != http.StatusBadRequest || code != string(queue.CodeInvalidUserID) {
		t.Fatalf("poll as a visitor by X-User-Id: %d %s", status, code)
	}
}

// pollAs polls ev's status naming user in X-User-Id, returning the answer's
// status and error code.
func pollAs(t *testing.T, e *gwEnv, ev, user string) (status int, code string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/v1/events/"+ev+"/status", nil)
	req.Header.Set(httpkit.UserHeader, user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("poll as %s: %d, body: %v", user, resp.StatusCode, err)
	}
	return resp.StatusCode, body.Error.Code
}

// TestTrustedHeaderOnlyFromTrustedProxies: X-User-Id is believed from a
// trusted proxy alone (from any other peer it is ignored: no ticket, no
// user), and trust mode without trusted proxies does not start.
func TestTrustedHeaderOnlyFromTrustedProxies(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	cfg := fast
	// The proxy is elsewhere: the test client (127.0.0.1) is not it.
	cfg.TrustUserHeader, cfg.TrustedProxies = true, []string{"192.0.2.1"}
	e := startGateway(t, sys, cfg, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "alice", 100)
	c, err := e.dial(t, ev, "", http.Header{httpkit.UserHeader: {"alice"}})
	if err != nil {
		t.Fatal(err)
	}
	if code := c.CloseCode(5 * time.Second); code != httpkit.CloseBadIdentity {
		t.Fatalf("X-User-Id from an untrusted peer: close %d", code)
	}
	if status, code := pollAs(t, e, ev, "alice"); status != http.StatusUnauthorized || code != string(queue.CodeMissingUserID) {
		t.Fatalf("poll as alice from an untrusted peer: %d %s", status, code)
	}
	bad := fast
	bad.TrustUserHeader = true
	if _, err := gateway.New(bad, gateway.Deps{Store: sys.Store}); err == nil || !strings.Contains(err.Error(), "WAITQ_TRUSTED_PROXIES") {
		t.Fatalf("trust mode without trusted proxies: %v", err)
	}
}

func TestClientFrames(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	sys.StartConsumer(sys.ConsumerConfig())
	e := startGateway(t, sys, fast, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "a", 100)
	sys.Join(ev, "b", 200)
	a := e.connect(t, ev, "a")
	a.Status(waiting(1, 2), 10*time.Second)

	for _, bad := range []string{`{"type":"jump"}`, `not json`, `{}`} {
		a.Send(bad)
		f := a.ErrorFrame(5 * time.Second)
		if f.Code != queue.CodeInvalidBody || f.Message == "" {
			t.Errorf("answer to %s: %+v", bad, f)
		}
	}
	if err := a.WS.Write(context.Background(), websocket.MessageBinary, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if f := a.ErrorFrame(5 * time.Second); f.Code != queue.CodeInvalidBody {
		t.Errorf("answer to a binary frame: %+v", f)
	}
	// A release by a user who holds nothing frees nothing and is no error.
	a.Send(`{"type":"release"}`)
	a.Status(waiting(1, 2), 5*time.Second)

	// Leave goes through Kafka behind the join: a is out of line, b moves up.
	a.Send(`{"type":"leave"}`)
	a.Status(inState(gateway.StateNotQueued), 10*time.Second)
	b := e.connect(t, ev, "b")
	b.Status(waiting(1, 1), 10*time.Second)

	// A frame over the read limit closes the socket (1009).
	b.Send(`{"type":"leave","pad":"` + strings.Repeat("x", 2000) + `"}`)
	if code := b.CloseCode(5 * time.Second); code != websocket.StatusMessageTooBig {
		t.Fatalf("oversized frame: close %d", code)
	}
}

func TestShutdownClosesSocketsWith1001(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	tickets, _ := queue.NewTicketSigner(ticketSecret)
	gw, err := gateway.New(fast, gateway.Deps{Store: sys.Store, Publisher: sys.Pub, Tickets: tickets, Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	<-gw.Started()
	e := &gwEnv{sys: sys, gw: gw, tickets: tickets, clock: newClock()}
	e.srv = newServer(t, gw)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	c := e.connect(t, ev, "u")
	c.Status(inState(gateway.StatePending), 10*time.Second) // a fresh ticket, not yet in line
	cancel()
	<-done
	if code := c.CloseCode(10 * time.Second); code != websocket.StatusGoingAway {
		t.Fatalf("close code at shutdown %d, want 1001", code)
	}
}

func TestHTTPRoutes(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startGateway(t, sys, fast, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	sys.Join(ev, "first", 100)
	sys.Join(ev, "second", 200)
	sys.StartConsumer(sys.ConsumerConfig())
	testenv.Eventually(t, 10*time.Second, func() (bool, string) { return len(sys.Waiting(ev)) == 2, "joins not ingested" })

	call := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.Bytes()
	}
	get := func(path string) (int, []byte) { return call(http.MethodGet, path, "") }
	post := func(path, body string) (int, []byte) { return call(http.MethodPost, path, body) }
	code, body := get("/v1/events/" + ev + "/status?ticket=" + e.ticket(ev, "second"))
	var st gateway.StatusFrame
	if err := json.Unmarshal(body, &st); code != 200 || err != nil || st.State != gateway.StateWaiting || st.Position != 2 || st.Total != 2 {
		t.Fatalf("poll status: %d %s", code, body)
	}
	for _, tc := range []struct {
		path   string
		status int
		code   queue.Code
	}{
		{"/v1/events/" + ev + "/status", 401, queue.CodeMissingUserID},
		{"/v1/events/" + ev + "/status?ticket=v1.x.y", 401, queue.CodeInvalidTicket},
		{"/v1/events/bad.id/status?ticket=x", 400, queue.CodeInvalidEventID},
		{"/v1/events/" + ev + "-nope/status?ticket=" + e.ticket(ev+"-nope", "u"), 404, queue.CodeEventNotFound},
	} {
		code, body := get(tc.path)
		var eb httpkit.ErrorBody
		if err := json.Unmarshal(body, &eb); code != tc.status || err != nil || eb.Error.Code != tc.code {
			t.Errorf("GET %s: %d %s, want %d %s", tc.path, code, body, tc.status, tc.code)
		}
	}

	// Admit "first", then release and verify with its entry token.
	e.gw.MonitorTick(context.Background())
	score, err := sys.Store.Client().ZScore(context.Background(), redisstore.HoldersKey(ev), "first").Result()
	if err != nil {
		t.Fatalf("first was not admitted: %v", err)
	}
	hold := int64(score)
	token := e.entry.Sign(entry.Token{EventID: ev, UserID: "first", Expires: hold})
	verify := func(tok string) gateway.VerifyResponse {
		code, body := post("/v1/entry/verify", `{"token":"`+tok+`"}`)
		var v gateway.VerifyResponse
		if err := json.Unmarshal(body, &v); code != 200 || err != nil {
			t.Fatalf("verify: %d %s", code, body)
		}
		return v
	}
	if v := verify(token); !v.Valid || v.State != "admitted" || v.UserID != "first" || v.ExpiresAt != hold {
		t.Fatalf("verify an admitted user's token: %+v", v)
	}
	waitingToken := e.entry.Sign(entry.Token{EventID: ev, UserID: "second", Expires: hold})
	if v := verify(waitingToken); v.Valid || v.State != "waiting" {
		t.Fatalf("verify a waiting user's token: %+v", v)
	}
	if v := verify("e1.forged.token"); v.Valid || v.State != "invalid" {
		t.Fatalf("verify a forged token: %+v", v)
	}
	// A protected service verifies offline with the published keys.
	code, body = get("/.well-known/jwks.json")
	keys, err := entry.ParseJWKS(body)
	if code != 200 || err != nil {
		t.Fatalf("jwks: %d %s %v", code, body, err)
	}
	if tok, err := keys.Verify(token, ev, time.Now()); err != nil || tok.UserID != "first" {
		t.Fatalf("offline verification with the JWKS: %+v %v", tok, err)
	}
	for i, want := range []bool{true, false} {
		code, body := post("/v1/events/"+ev+"/release", `{"token":"`+token+`"}`)
		var r gateway.ReleaseResponse
		if err := json.Unmarshal(body, &r); code != 200 || err != nil || r.Released != want {
			t.Fatalf("release %d: %d %s, want released=%v", i+1, code, body, want)
		}
	}
	if v := verify(token); v.Valid || v.State != "expired" {
		t.Fatalf("verify a released user's token: %+v", v)
	}
	for _, tc := range []struct {
		path, body string
		status     int
		code       queue.Code
	}{
		{"/v1/events/" + ev + "/release", `{"token":"e1.forged.token"}`, 401, queue.CodeInvalidTicket},
		{"/v1/events/" + ev + "-other/release", `{"token":"` + token + `"}`, 401, queue.CodeInvalidTicket},
		{"/v1/events/" + ev + "/release", `{"tok":"x"}`, 400, queue.CodeInvalidBody},
		{"/v1/events/" + ev + "/release", strings.Repeat("x", 5000), 413, queue.CodeBodyTooLarge},
		{"/v1/entry/verify", `[]`, 400, queue.CodeInvalidBody},
	} {
		code, body := post(tc.path, tc.body)
		var eb httpkit.ErrorBody
		if err := json.Unmarshal(body, &eb); code != tc.status || err != nil || eb.Error.Code != tc.code {
			t.Errorf("POST %s %.40s: %d %s, want %d %s", tc.path, tc.body, code, body, tc.status, tc.code)
		}
	}
}

func TestStatusPollingIsRateLimited(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	cfg := fast
	cfg.StatusLimit = httpkit.RateLimit{PerSecond: 0.5, Burst: 2}
	e := startGateway(t, sys, cfg, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	path := e.srv.URL + "/v1/events/" + ev + "/status?ticket=" + e.ticket(ev, "poller")
	codes := make([]int, 4)
	for i := range codes {
		resp, err := http.Get(path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[i] = resp.StatusCode
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 || codes[3] != 429 {
		t.Fatalf("poll statuses %v, want 200 200 429 429", codes)
	}
}

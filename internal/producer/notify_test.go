package producer_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestNotifyKeepsAnAddressOfSomeoneWithAPlace: PUT …/notify keeps the
// caller's address when they wait; every bad input is a 4xx that changes
// nothing (not an address, oversized, a line break, an address left by 3
// others, no place); DELETE withdraws it; no log line holds an address.
func TestNotifyKeepsAnAddressOfSomeoneWithAPlace(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	var logs lockedBuffer
	e := startAPIWith(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken}, func(d *producer.Deps) {
		d.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":1,"away":{"keepSeconds":600,"claimSeconds":300,"notifyAhead":50}}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	ctx := context.Background()
	var msgs []queue.Message
	for _, u := range []string{"holder", "w1", "w2", "w3", "w4"} {
		msgs = append(msgs, queue.NewMessage(queue.OpJoin, ev, u, 1))
	}
	if _, err := sys.Store.Ingest(ctx, msgs, 0); err != nil {
		t.Fatal(err)
	}
	if r, err := sys.Store.Tick(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: time.Now().UnixMilli(), AdmitBatch: 1}); err != nil || len(r[0].Admitted) != 1 {
		t.Fatalf("admit the holder: %+v %v", r, err)
	}
	rdb := sys.Store.Client()
	put := func(u, body string) reply {
		h := user(u)
		h["Content-Type"] = "application/json"
		return e.do(t, http.MethodPut, "/v1/events/"+ev+"/notify", h, strings.NewReader(body))
	}
	kept := func() map[string]string {
		m, err := rdb.HGetAll(ctx, redisstore.AddressesKey(ev)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, u := range []string{"w1", "w2", "w3"} {
		if r := put(u, `{"email":"Crowd@example.com"}`); r.status != http.StatusNoContent {
			t.Fatalf("%s: %d %s", u, r.status, r.body)
		}
	}
	secret := strings.Repeat("x", 240) + "@example.com"
	for _, c := range []struct {
		name, user, body string
		status           int
		code             queue.Code
	}{
		{"not an address", "w4", `{"email":"not-an-address"}`, 400, queue.CodeInvalidEmail},
		{"a name with it", "w4", `{"email":"Eve <eve@example.com>"}`, 400, queue.CodeInvalidEmail},
		{"oversized", "w4", `{"email":"` + strings.Repeat("y", 250) + `@example.com"}`, 400, queue.CodeInvalidEmail},
		{"CRLF header injection", "w4", `{"email":"eve@example.com\r\nBcc: all@example.com"}`, 400, queue.CodeInvalidEmail},
		{"LF header injection", "w4", `{"email":"eve@example.com\nSubject: hi"}`, 400, queue.CodeInvalidEmail},
		{"a fourth user of one address", "w4", `{"email":"crowd@EXAMPLE.com"}`, 409, queue.CodeEmailLimit},
		{"no place", "stranger", `{"email":"stranger@example.com"}`, 409, queue.CodeNoPlace},
		{"no place: admitted", "holder", `{"email":"holder@example.com"}`, 409, queue.CodeNoPlace},
		{"no email", "w4", `{}`, 400, queue.CodeInvalidEmail},
		{"an unknown field", "w4", `{"email":"a@example.com","cc":"b@example.com"}`, 400, queue.CodeInvalidBody},
		{"not JSON", "w4", `email=a@example.com`, 400, queue.CodeInvalidBody},
	} {
		before := kept()
		r := put(c.user, c.body)
		if r.status != c.status || r.errorCode(t) != c.code {
			t.Errorf("%s: %d %s; want %d %s", c.name, r.status, r.body, c.status, c.code)
		}
		if after := kept(); len(after) != len(before) || after[c.user] != before[c.user] {
			t.Errorf("%s changed the addresses: %v -> %v", c.name, before, after)
		}
	}
	if r := e.do(t, http.MethodPut, "/v1/events/no-such-event/notify", map[string]string{"X-User-Id": "w1", "Content-Type": "application/json"}, strings.NewReader(`{"email":"a@example.com"}`)); r.status != http.StatusNotFound {
		t.Errorf("unknown event: %d %s", r.status, r.body)
	}
	if r := put("w4", `{"email":"`+secret+`"}`); r.status != http.StatusNoContent {
		t.Fatalf("w4: %d %s", r.status, r.body)
	}
	if got := kept()["w4"]; got != "0|"+secret {
		t.Fatalf("w4's address kept as %q", got)
	}
	for range 2 { // withdrawing twice is the same
		if r := e.do(t, http.MethodDelete, "/v1/events/"+ev+"/notify", user("w4"), nil); r.status != http.StatusNoContent {
			t.Fatalf("withdraw: %d %s", r.status, r.body)
		}
	}
	if _, ok := kept()["w4"]; ok {
		t.Fatal("the address outlived its withdrawal")
	}
	if l := strings.ToLower(logs.String()); strings.Contains(l, "crowd@") || strings.Contains(l, "xxxx@") || strings.Contains(l, "eve@") || strings.Contains(l, "stranger@") {
		t.Fatalf("an address is in the logs:\n%s", logs.String())
	}
}

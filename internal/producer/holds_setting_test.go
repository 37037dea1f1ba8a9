package producer_test

import (
	"encoding/json"
	"testing"

	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestMaxItemsPerUserSetting: the admin PUT takes maxItemsPerUser (0 to
// 100; absent keeps it), the GET shows it, and out of range is refused.
func TestMaxItemsPerUserSetting(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	ev := testenv.EventID(t)
	get := func() int {
		t.Helper()
		r := e.do(t, "GET", "/v1/admin/events/"+ev, admin(), nil)
		var st queue.EventStatus
		if err := json.Unmarshal(r.body, &st); r.status != 200 || err != nil {
			t.Fatalf("get: %d %s", r.status, r.body)
		}
		return st.MaxItemsPerUser
	}
	if r := e.putEvent(t, ev, `{"capacity":5}`); r.status != 201 || get() != 0 {
		t.Fatalf("create: %d %s, maxItemsPerUser %d (0: one)", r.status, r.body, get())
	}
	if r := e.putEvent(t, ev, `{"maxItemsPerUser":4}`); r.status != 200 || get() != 4 {
		t.Fatalf("set 4: %d %s, got %d", r.status, r.body, get())
	}
	if r := e.putEvent(t, ev, `{"capacity":6}`); r.status != 200 || get() != 4 {
		t.Fatalf("an update without it keeps it: %d, got %d", r.status, get())
	}
	for _, bad := range []string{`{"maxItemsPerUser":101}`, `{"maxItemsPerUser":-1}`} {
		if r := e.putEvent(t, ev, bad); r.status != 400 || r.errorCode(t) != queue.CodeInvalidConfig {
			t.Errorf("%s: %d %s, want 400 invalid_config", bad, r.status, r.body)
		}
	}
}

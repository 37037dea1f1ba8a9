//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testws"
)

// TestPipeline runs every part as a container: users join over HTTP through
// producer-api, Kafka and the consumer, then watch over WebSocket from the
// test. The first capacity users are admitted in join order, the others see
// their positions; a release admits the next, a leave shortens the line, and
// entry tokens verify at the gateway.
func TestPipeline(t *testing.T) {
	s := newStack(t)
	_, api := s.Producer()
	s.IngestTickOnly("ingest")

	ev := testenv.EventID(t)
	api.CreateEvent(t, ev, `{"capacity":3,"staySeconds":300,"partitions":3}`)
	// Everyone is in line before the gateway, and so its slot monitor,
	// starts: who is admitted first is then decided by the join order alone.
	joins := make([]producer.JoinResponse, 8)
	for i := range joins {
		joins[i] = api.MustJoin(t, ev, fmt.Sprintf("u%d", i+1))
	}
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		n, err := s.RDB.ZCard(t.Context(), redisstore.WaitingKey(ev)).Result()
		return err == nil && n == int64(len(joins)), fmt.Sprintf("%d of %d joins in line (%v)", n, len(joins), err)
	})
	gw := s.Gateway("gateway", 250*time.Millisecond)

	clients := make([]*testws.Client, len(joins))
	for i, j := range joins {
		c, err := testws.Dial(t, gw.WS(j.StatusURL), nil)
		if err != nil {
			t.Fatalf("dial as %s: %v", j.UserID, err)
		}
		clients[i] = c
	}
	entry := make([]string, 3)
	for i := range 3 {
		f := clients[i].Admitted(10 * time.Second)
		if f.UserID != joins[i].UserID || f.EntryToken == "" {
			t.Fatalf("admitted frame %+v, want %s with a token", f, joins[i].UserID)
		}
		entry[i] = f.EntryToken
	}
	for i := 3; i < len(joins); i++ {
		clients[i].Status(testws.Waiting(int64(i-2), 5), 10*time.Second)
	}
	if v := verify(t, gw, entry[1]); !v.Valid || v.State != "admitted" || v.UserID != "u2" {
		t.Errorf("verify u2's entry token: %+v", v)
	}

	// u1 is done: its slot goes to u4, the head of the line.
	clients[0].Send(`{"type":"release"}`)
	clients[3].Admitted(10 * time.Second)
	clients[4].Status(testws.Waiting(1, 4), 10*time.Second)
	if v := verify(t, gw, entry[0]); v.Valid || v.State != "expired" {
		t.Errorf("verify released u1's entry token: %+v, want expired", v)
	}
	// u8 leaves (through Kafka, behind its join): the line is 3 long.
	clients[7].Send(`{"type":"leave"}`)
	clients[4].Status(testws.Waiting(1, 3), 10*time.Second)
	clients[6].Status(testws.Waiting(3, 3), 10*time.Second)
	holders, err := s.RDB.ZCard(t.Context(), redisstore.HoldersKey(ev)).Result()
	if err != nil || holders != 3 {
		t.Errorf("holders = %d (%v), want the capacity 3", holders, err)
	}
}

// release gives user's slot back through the gateway's HTTP route, as the
// protected service does, and reports whether a slot was freed.
func release(t *testing.T, gw *node, event, entryToken string) bool {
	t.Helper()
	var r gateway.ReleaseResponse
	postJSON(t, gw.URL()+"/v1/events/"+event+"/release", map[string]string{"token": entryToken}, &r)
	return r.Released
}

// verification is the answer of the gateway's /v1/entry/verify.
type verification struct {
	Valid  bool
	State  gateway.UserState
	UserID string
}

func verify(t *testing.T, gw *node, token string) verification {
	t.Helper()
	var v verification
	postJSON(t, gw.URL()+"/v1/entry/verify", map[string]string{"token": token}, &v)
	return v
}

// postJSON posts body as JSON to url and decodes a 200 answer into out.
func postJSON(t *testing.T, url string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	decode200(t, "POST "+url, resp, err, out)
}

// getJSON gets url and decodes a 200 answer into out.
func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	decode200(t, "GET "+url, resp, err, out)
}

func decode200(t *testing.T, what string, resp *http.Response, err error, out any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", what, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

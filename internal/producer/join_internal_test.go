package producer

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/testkit/oddtext"
)

// encoderJSON is what echo's c.JSON writes for v.
func encoderJSON(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestJoinResponseJSONIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 20000 {
		resp := JoinResponse{EventID: oddtext.String(r), UserID: oddtext.String(r), JoinedAt: r.Int64() - r.Int64(), Ticket: oddtext.String(r), StatusURL: oddtext.String(r)}
		if got, want := string(resp.appendJSON(nil)), encoderJSON(t, resp); got != want {
			t.Fatalf("%+v: appendJSON = %s\nwant %s", resp, got, want)
		}
	}
}

func FuzzJoinResponseJSON(f *testing.F) {
	f.Add("ev", "alice", int64(1), "v1.x.y", "/queue-status/ev?ticket=v1.x.y")
	f.Add("<", "&\u2028", int64(-1), "\xff", "\"\\")
	f.Fuzz(func(t *testing.T, ev, user string, at int64, ticket, status string) {
		resp := JoinResponse{EventID: ev, UserID: user, JoinedAt: at, Ticket: ticket, StatusURL: status}
		if got, want := string(resp.appendJSON(nil)), encoderJSON(t, resp); got != want {
			t.Fatalf("appendJSON = %s\nwant %s", got, want)
		}
	})
}

// TestPlainJSON: the hand-written reply is used only where c.JSON would
// write compact JSON.
func TestPlainJSON(t *testing.T) {
	for _, tc := range []struct {
		name, target string
		debug, other bool
		want         bool
	}{
		{"no query", "/v1/events/ev/queue", false, false, true},
		{"another query", "/v1/events/ev/queue?x=1", false, false, true},
		{"pretty", "/v1/events/ev/queue?pretty", false, false, false},
		{"debug", "/v1/events/ev/queue", true, false, false},
		{"another serializer", "/v1/events/ev/queue", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := echo.New()
			e.Debug = tc.debug
			if tc.other {
				e.JSONSerializer = otherSerializer{}
			}
			c := e.NewContext(httptest.NewRequest(http.MethodPost, tc.target, nil), httptest.NewRecorder())
			if got := plainJSON(c); got != tc.want {
				t.Fatalf("plainJSON = %t, want %t", got, tc.want)
			}
		})
	}
}

type otherSerializer struct{ echo.DefaultJSONSerializer }

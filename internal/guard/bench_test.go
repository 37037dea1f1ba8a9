package guard_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/pkg/entry"
)

// originFunc answers in process, so that the benchmark measures the guard's
// own work and not the loopback network's.
type originFunc func(*http.Request) *http.Response

func (f originFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r), nil }

// BenchmarkGuardAdmittedRequest is the guard's own cost for an admitted
// visitor: the guard's cached cookie check, the reverse proxy, the metrics
// and the health figures, against an origin answering in process.
func BenchmarkGuardAdmittedRequest(b *testing.B) {
	k, err := entry.NewKeyring("k1", []byte(strings.Repeat("s", 32)), nil)
	if err != nil {
		b.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(k.JWKS()) }))
	b.Cleanup(jwks.Close)
	page := strings.Repeat("x", 2048)
	origin := originFunc(func(r *http.Request) *http.Response {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: io.NopCloser(strings.NewReader(page)),
			ContentLength: int64(len(page)), Request: r, ProtoMajor: 1, ProtoMinor: 1}
	})
	cfg := guard.Config{OriginURL: "http://origin.test", EventID: event, WaitingRoomURL: room, JWKSURL: jwks.URL}
	keys := entry.NewKeySource(entry.KeySourceConfig{URL: cfg.KeysURL()})
	g, err := guard.New(cfg, guard.Deps{Keys: keys, Transport: origin})
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Ready(b.Context()); err != nil {
		b.Fatal(err)
	}
	tok := k.Sign(entry.Token{EventID: event, UserID: "alice", Expires: time.Now().Add(time.Hour).UnixMilli()})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(http.MethodGet, "/product/1", nil)
			req.Header.Set("Cookie", "waitq_entry_"+event+"="+tok)
			w := httptest.NewRecorder()
			g.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Fatalf("status %d", w.Code)
			}
		}
	})
}

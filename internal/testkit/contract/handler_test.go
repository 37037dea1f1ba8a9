package contract_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/waitq/waitq/internal/testkit/contract"
)

// recordingTB keeps the errors a contract check reports.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestHandlerFindsMismatches: an answer the document does not declare, a
// body off its schema and an undeclared header are reported; a declared
// answer is not.
func TestHandlerFindsMismatches(t *testing.T) {
	doc := contract.Gateway(t)
	for _, tc := range []struct {
		name, path string
		h          http.HandlerFunc
		want       string // "" when the exchange is in the contract
	}{
		{"declared", "/healthz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"status":"ok"}`)
		}, ""},
		{"undeclared status", "/healthz", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusTeapot)
		}, "not declared"},
		{"undeclared field", "/healthz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"status":"ok","extra":1}`)
		}, "extra"},
		{"undeclared header", "/healthz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Secret", "1")
			io.WriteString(w, `{"status":"ok"}`)
		}, "X-Secret"},
		{"error body off the schema", "/v1/events/e1/status", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":"no_such_code","message":"m"}}`)
		}, "no_such_code"},
		{"no such route", "/nowhere", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "hello")
		}, "no such route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingTB{TB: t}
			srv := httptest.NewServer(doc.Handler(rec, tc.h))
			resp, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			srv.Close()
			got := strings.Join(rec.errs, "\n")
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("reported %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFrames: the frames of docs/api.md pass, unknown types and fields fail.
func TestFrames(t *testing.T) {
	doc := contract.Gateway(t)
	for _, f := range []string{
		`{"type":"status","eventId":"demo","userId":"alice","state":"waiting","position":12,"total":340,"etaSeconds":30,"ts":1795310072135}`,
		`{"type":"status","eventId":"drop","userId":"bob","state":"prequeue","position":0,"total":5210,"etaSeconds":null,"ts":1795310072135,"opensAt":1795310100000,"opensInSeconds":28}`,
		`{"type":"admitted","eventId":"demo","userId":"alice","entryToken":"e2.k.x.y","expiresAt":1795310132135,"redirectUrl":"https://shop.example/p?waitq_token=e2.k.x.y"}`,
		`{"type":"error","code":"invalid_body","message":"unknown frame type"}`,
	} {
		if err := doc.Frame([]byte(f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, f := range []string{
		`{"type":"jump"}`,
		`{"type":"status","eventId":"demo","userId":"alice","state":"waiting","position":1,"total":1,"etaSeconds":1,"ts":1,"extra":1}`,
		`{"type":"status","eventId":"demo","userId":"alice","state":"flying","position":1,"total":1,"etaSeconds":1,"ts":1}`,
		`{"type":"error","code":"invalid_body"}`,
	} {
		if err := doc.Frame([]byte(f)); err == nil {
			t.Errorf("%s passed", f)
		}
	}
}

package contract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// transportHeaders are set by net/http, CORS or the transport, not by the
// API's contract: they need not be declared.
var transportHeaders = map[string]bool{
	"Content-Type": true, "Content-Length": true, "Date": true, "Vary": true,
	"Transfer-Encoding": true, "Connection": true, "X-Content-Type-Options": true,
	"Upgrade": true, "Sec-Websocket-Accept": true, "Sec-Websocket-Extensions": true,
	"Accept-Ranges": true, "Last-Modified": true, "Etag": true, "Content-Encoding": true,
}

func init() {
	// An event stream's frames are checked by the client that reads them
	// (testkit/testws), one event at a time.
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/javascript", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/css", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("image/svg+xml", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/jwk-set+json", openapi3filter.JSONBodyDecoder)
}

// Handler wraps h, a service under test, so that every exchange it serves
// is checked against d, failing tb:
//   - a request the document's schemas refuse must be answered with an error
//     (4xx or 5xx): the service refuses what the contract does not allow;
//   - every answer's status is declared for its operation, its declared
//     headers and its body match, and it sends no header of its own that the
//     document does not declare;
//   - a request to no documented route is answered 404 or 405 with the one
//     error body;
//   - an upgrade to WebSocket (101) is declared.
//
// Exchanges that end after the test are not checked.
func (d *Doc) Handler(tb testing.TB, h http.Handler) http.Handler {
	var mu sync.Mutex
	ended := false
	tb.Cleanup(func() { mu.Lock(); ended = true; mu.Unlock() })
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			tb.Errorf("contract %s: "+format, append([]any{d.Name}, args...)...)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, d.Prefix) {
			h.ServeHTTP(w, r)
			return
		}
		reqBody, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		rec := &recorder{w: w, status: 0}
		h.ServeHTTP(rec, r)
		if rec.status == 0 && !rec.hijacked {
			rec.status = http.StatusOK
		}
		if err := d.check(r, reqBody, rec); err != nil {
			fail("%s %s: %v", r.Method, r.URL.RequestURI(), err)
		}
	})
}

// check checks one exchange.
func (d *Doc) check(r *http.Request, reqBody []byte, rec *recorder) error {
	if r.Method == http.MethodOptions || r.Method == http.MethodHead {
		return nil // CORS preflights and HEAD are the framework's
	}
	route, params := d.route(r)
	if route == nil {
		if rec.status != http.StatusNotFound && rec.status != http.StatusMethodNotAllowed {
			return fmt.Errorf("no such route in the document, answered %d", rec.status)
		}
		return d.checkErrorBody(rec)
	}
	// A copy of the request for the validator, with the body it was sent.
	vr := r.Clone(context.Background())
	vr.Body = io.NopCloser(bytes.NewReader(reqBody))
	if len(reqBody) > 0 && vr.Header.Get("Content-Type") == "" {
		// The handlers read a body without a type as JSON.
		vr.Header.Set("Content-Type", "application/json")
	}
	in := &openapi3filter.RequestValidationInput{
		Request: vr, PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
			MultiError:          true,
			SkipSettingDefaults: true,
		},
	}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if rec.hijacked {
		if route.Operation.Responses.Status(http.StatusSwitchingProtocols) == nil {
			return fmt.Errorf("upgraded to WebSocket (101), which the document does not declare")
		}
		return nil
	}
	if reqErr != nil && rec.status < 400 {
		return fmt.Errorf("a request the document refuses (%v) was answered %d", reqErr, rec.status)
	}
	declared := route.Operation.Responses.Status(rec.status)
	if declared == nil || declared.Value == nil {
		return fmt.Errorf("answered %d, not declared (body %.200s)", rec.status, rec.body.Bytes())
	}
	for name := range rec.Header() {
		if transportHeaders[name] || strings.HasPrefix(name, "Access-Control-") {
			continue
		}
		if !headerDeclared(declared.Value, name) {
			return fmt.Errorf("answered %d with header %s, not declared", rec.status, name)
		}
	}
	body := rec.body.Bytes()
	if len(body) > 0 && len(declared.Value.Content) == 0 {
		return fmt.Errorf("answered %d with a %s body, the document declares none", rec.status, rec.Header().Get("Content-Type"))
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 rec.status,
		Header:                 rec.Header(),
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true, MultiError: true,
			ExcludeResponseBody: isStream(rec.Header()),
		},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("answer %d %.300s: %w", rec.status, body, err)
	}
	return nil
}

func isStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// checkErrorBody checks a JSON body against the one error schema.
func (d *Doc) checkErrorBody(rec *recorder) error {
	mt, _, _ := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	schema := d.errorSchema()
	if mt != "application/json" || schema == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(rec.body.Bytes(), &v); err != nil {
		return fmt.Errorf("error body %q: %v", rec.body.Bytes(), err)
	}
	if err := schema.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("error body %s does not match the Error schema: %w", rec.body.Bytes(), err)
	}
	return nil
}

// recorder passes an answer on while keeping its status and body.
type recorder struct {
	w        http.ResponseWriter
	status   int
	body     bytes.Buffer
	hijacked bool
}

func (r *recorder) Header() http.Header { return r.w.Header() }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.w.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.body.Len() == 0 && len(b) > 0 {
		// What net/http sends: the client sees a sniffed type.
		if _, ok := r.Header()["Content-Type"]; !ok {
			r.Header().Set("Content-Type", http.DetectContentType(b))
		}
	}
	if r.body.Len() < 1<<20 {
		r.body.Write(b)
	}
	return r.w.Write(b)
}

// Flush passes a flush on (event streams).
func (r *recorder) Flush() {
	if f, ok := r.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack passes a hijack on (WebSocket upgrades).
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := r.w.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("contract: %T cannot hijack", r.w)
	}
	r.hijacked = true
	return hj.Hijack()
}

// Unwrap gives http.ResponseController the writer underneath.
func (r *recorder) Unwrap() http.ResponseWriter { return r.w }

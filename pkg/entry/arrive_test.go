package entry_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/pkg/entry"
)

const reportToken = "the-events-report-token-0123456789"

// gatewayArrivals is the gateway's POST …/arrivals: it keeps the tokens
// reported with the event's report token and answers with status.
type gatewayArrivals struct {
	*httptest.Server
	status atomic.Int32
	tokenLog
}

func newGatewayArrivals(t *testing.T) *gatewayArrivals {
	g := &gatewayArrivals{}
	g.status.Store(http.StatusOK)
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/events/"+event+"/arrivals" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "wrong route", http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+reportToken {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"code":"unauthorized"}}`)
			return
		}
		var b struct{ Token string }
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		g.add(b.Token)
		switch st := int(g.status.Load()); st {
		case http.StatusOK:
			io.WriteString(w, `{"arrived":true}`)
		case http.StatusConflict:
			w.WriteHeader(st)
			io.WriteString(w, `{"error":{"code":"not_admitted","message":"not the current admission"}}`)
		default:
			w.WriteHeader(st)
		}
	}))
	t.Cleanup(g.Close)
	return g
}

// TestGuardReportsTheArrivalOnce: a token that comes from the waiting room
// (the waitq_token parameter, by GET or another method) is reported once
// as arrived, with the event's report token; the requests with its cookie
// after are not, nor is a token that does not verify; a failed report is
// logged, never shown.
func TestGuardReportsTheArrivalOnce(t *testing.T) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	gw := newGatewayArrivals(t)
	var failures atomic.Int64
	f := newFixture(t, k1, func(c *entry.GuardConfig) {
		c.Arrive = func(ctx context.Context, token string) error {
			_, err := entry.Arrive(ctx, gw.Client(), gw.URL, event, reportToken, token)
			if err != nil {
				failures.Add(1)
			}
			return err
		}
	})
	tok := k1.Sign(claims(event, "alice", time.Hour))
	resp := f.do(http.MethodGet, "http://shop.example/product/1?"+entry.TokenParam+"="+tok, "", "")
	f.guard.Wait()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("arrival: %d, want 302", resp.StatusCode)
	}
	if got := gw.got(); len(got) != 1 || got[0] != tok {
		t.Fatalf("arrivals %q after the first request, want the token once", got)
	}
	for range 3 {
		if resp := f.do(http.MethodGet, "http://shop.example/product/2", tok, ""); resp.StatusCode != 200 {
			t.Fatalf("with the cookie: %d", resp.StatusCode)
		}
	}
	bad := k1.Sign(claims("other", "alice", time.Hour))
	f.do(http.MethodGet, "http://shop.example/?"+entry.TokenParam+"="+bad, "", "")
	f.guard.Wait()
	if got := gw.got(); len(got) != 1 {
		t.Fatalf("%d arrivals, want only the first request's", len(got))
	}
	// A POST straight from the waiting room is an arrival too; a failed
	// report leaves the visitor's answer alone, and is tried again
	// (ArriveTries in all).
	gw.status.Store(http.StatusServiceUnavailable)
	resp = f.do(http.MethodPost, "http://shop.example/cart?"+entry.TokenParam+"="+tok, "", "")
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(body) != "origin" {
		t.Fatalf("POST arrival: %d %q", resp.StatusCode, body)
	}
	f.guard.Wait()
	if len(gw.got()) != 1+entry.ArriveTries || failures.Load() != entry.ArriveTries {
		t.Fatalf("a failing report: %d arrivals, %d failures; want %d tries", len(gw.got())-1, failures.Load(), entry.ArriveTries)
	}
}

// TestAnArrivalOutlivesAShortOutage: a report the gateway fails twice (it
// restarts) is sent again until it is taken.
func TestAnArrivalOutlivesAShortOutage(t *testing.T) {
	k1, _ := entry.NewKeyring("k1", seed(1), nil)
	var tries atomic.Int64
	f := newFixture(t, k1, func(c *entry.GuardConfig) {
		c.Arrive = func(ctx context.Context, token string) error {
			if tries.Add(1) <= 2 {
				return errors.New("503 Service Unavailable")
			}
			return nil
		}
	})
	tok := k1.Sign(claims(event, "alice", time.Hour))
	f.do(http.MethodGet, "http://shop.example/product/1?"+entry.TokenParam+"="+tok, "", "")
	f.guard.Wait()
	if tries.Load() != 3 {
		t.Fatalf("%d tries, want 3: two failed, the third taken", tries.Load())
	}
}

func TestArriveAnswers(t *testing.T) {
	gw := newGatewayArrivals(t)
	ctx := context.Background()
	if ok, err := entry.Arrive(ctx, gw.Client(), gw.URL+"/", event, reportToken, "tok"); err != nil || !ok {
		t.Fatalf("Arrive = %v, %v", ok, err)
	}
	gw.status.Store(http.StatusConflict)
	if ok, err := entry.Arrive(ctx, gw.Client(), gw.URL, event, reportToken, "tok"); err != nil || ok {
		t.Fatalf("not the current admission: %v, %v; want false, no error", ok, err)
	}
	gw.status.Store(http.StatusOK)
	if _, err := entry.Arrive(ctx, gw.Client(), gw.URL, event, "wrong", "tok"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a wrong report token: %v", err)
	}
}

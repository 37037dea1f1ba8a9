package producer_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// countingReports counts the report reads that reach the store.
type countingReports struct {
	queue.ReportStore
	reads atomic.Int64
}

func (c *countingReports) FairnessReport(ctx context.Context, id string, nowMs int64) (queue.FairnessReport, error) {
	c.reads.Add(1)
	return c.ReportStore.FairnessReport(ctx, id, nowMs)
}

// fakeClock is a clock the test moves.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

// TestFairnessReportIsReadOncePerEventPerTTL: many requests for an
// event's report, at once and one after another, read the store once per
// FairnessTTL; an unknown id is a 404 each time and keeps no entry; a bad
// id a 400 that reads nothing.
func TestFairnessReportIsReadOncePerEventPerTTL(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	reports := &countingReports{ReportStore: sys.Store}
	clock := &fakeClock{}
	clock.ms.Store(time.Now().UnixMilli())
	e := startAPIWith(t, sys, producer.Config{JoinLimit: httpkit.RateLimit{PerSecond: 1000, Burst: 1000}}, func(d *producer.Deps) {
		d.Reports, d.Now = reports, clock.now
	})
	ev := testenv.EventID(t)
	testsys.PutLine(t, sys.Store, ev, 1, 60, 3)
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			if r := e.do(t, http.MethodGet, "/v1/events/"+ev+"/fairness", nil, nil); r.status != http.StatusOK {
				t.Errorf("status %d: %s", r.status, r.body)
			}
		})
	}
	wg.Wait()
	r := e.do(t, http.MethodGet, "/v1/events/"+ev+"/fairness", nil, nil)
	if n := reports.reads.Load(); n != 1 {
		t.Fatalf("%d store reads for 41 requests within the TTL, want 1", n)
	}
	if cc := r.header.Get("Cache-Control"); cc != "public, max-age=2" {
		t.Errorf("Cache-Control %q", cc)
	}
	var rep queue.FairnessReport
	if err := json.Unmarshal(r.body, &rep); err != nil || rep.EventID != ev || rep.Kind != "first-come" || rep.Draw != nil {
		t.Fatalf("report %s: %v", r.body, err)
	}
	clock.ms.Add(producer.FairnessTTL.Milliseconds())
	e.do(t, http.MethodGet, "/v1/events/"+ev+"/fairness", nil, nil)
	if n := reports.reads.Load(); n != 2 {
		t.Fatalf("%d store reads after the TTL, want 2", n)
	}
	for _, tc := range []struct {
		id    string
		want  int
		code  queue.Code
		reads int64
	}{
		{"no-such-" + ev, http.StatusNotFound, queue.CodeEventNotFound, 1},
		{"no-such-" + ev, http.StatusNotFound, queue.CodeEventNotFound, 1}, // nothing kept: read again
		{"bad%20id", http.StatusBadRequest, queue.CodeInvalidEventID, 0},
	} {
		before := reports.reads.Load()
		r := e.do(t, http.MethodGet, "/v1/events/"+tc.id+"/fairness", nil, nil)
		if r.status != tc.want || r.errorCode(t) != tc.code || reports.reads.Load()-before != tc.reads {
			t.Errorf("%s: %d %s, %d reads; want %d %s, %d reads", tc.id, r.status, r.body, reports.reads.Load()-before, tc.want, tc.code, tc.reads)
		}
	}
}

// TestAdmittedOrderTellsTheCallerTheirOwnLine: before admission 409
// not_admitted; after it the caller's stamp and the people admitted before
// them who joined after; without an identity 401.
func TestAdmittedOrderTellsTheCallerTheirOwnLine(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback})
	ev := testenv.EventID(t)
	testsys.PutLine(t, sys.Store, ev, 5, 60, 0)
	ctx := context.Background()
	ingest := func(user string, ts int64) {
		if _, err := sys.Store.Ingest(ctx, []queue.Message{{V: 1, Op: queue.OpJoin, EventID: ev, UserID: user, TS: ts, ID: "x"}}, ts+10); err != nil {
			t.Fatal(err)
		}
	}
	tick := func(now int64) {
		if _, err := sys.Store.Tick(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: now, AdmitBatch: 10}); err != nil {
			t.Fatal(err)
		}
	}
	ingest("b", 2000)
	ingest("c", 3000)
	path := "/v1/events/" + ev + "/fairness/mine"
	if r := e.do(t, http.MethodGet, path, user("b"), nil); r.status != http.StatusConflict || r.errorCode(t) != queue.CodeNotAdmitted {
		t.Fatalf("before admission: %d %s", r.status, r.body)
	}
	tick(4000)
	ingest("a", 1000) // late: joined before b and c, both admitted
	tick(5000)
	r := e.do(t, http.MethodGet, path, user("a"), nil)
	var o queue.AdmittedOrder
	if err := json.Unmarshal(r.body, &o); err != nil || r.status != http.StatusOK || o.JoinedAt != 1000 || o.OvertakenBy != 2 || o.UserID != "a" {
		t.Fatalf("a: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodGet, path, nil, nil); r.status != http.StatusUnauthorized {
		t.Errorf("no identity: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodGet, "/v1/events/nope-"+ev+"/fairness/mine", user("a"), nil); r.status != http.StatusNotFound {
		t.Errorf("unknown event: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodGet, "/v1/events/bad%20id/fairness/mine", user("a"), nil); r.status != http.StatusBadRequest || r.errorCode(t) != queue.CodeInvalidEventID {
		t.Errorf("bad event id: %d %s", r.status, r.body)
	}
	var rep queue.FairnessReport
	r = e.do(t, http.MethodGet, "/v1/events/"+ev+"/fairness", nil, nil)
	if err := json.Unmarshal(r.body, &rep); err != nil || rep.Order.Inversions != 2 || rep.Order.Admissions != 3 || rep.Order.KendallTau != 2.0/3 {
		t.Errorf("report %s", r.body)
	}
	if r := e.do(t, http.MethodGet, "/metrics", nil, nil); !strings.Contains(string(r.body), `waitq_event_inversion_pairs_total{event="`+ev+`"} 2`) {
		t.Errorf("no inverted pairs in the metrics")
	}
}

// TestADropsFairnessReportCarriesItsDraw: a drop's report has its draw,
// sealed before the opening (no seed, not verified), verified after.
func TestADropsFairnessReportCarriesItsDraw(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	clock := &fakeClock{}
	opens := time.Now().Add(time.Hour).UnixMilli()
	clock.ms.Store(opens - 1000)
	e := startAPIAt(t, sys, producer.Config{}, clock.now)
	ev := testenv.EventID(t)
	sys.CreateDrop(ev, 5, 1, opens, 600)
	read := func() queue.FairnessReport {
		t.Helper()
		r := e.do(t, http.MethodGet, "/v1/events/"+ev+"/fairness", nil, nil)
		var rep queue.FairnessReport
		if err := json.Unmarshal(r.body, &rep); err != nil || r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return rep
	}
	if rep := read(); rep.Kind != "drop" || rep.Draw == nil || rep.Draw.Seed != "" || rep.Draw.Verified || rep.Draw.Commitment == "" {
		t.Fatalf("before the opening: %+v", rep)
	}
	clock.ms.Store(opens + producer.FairnessTTL.Milliseconds())
	if rep := read(); rep.Draw == nil || rep.Draw.Seed == "" || !rep.Draw.Verified {
		t.Fatalf("after the opening: %+v", rep.Draw)
	}
}

// failingReports is a store that does not answer.
type failingReports struct{ queue.ReportStore }

func (failingReports) FairnessReport(context.Context, string, int64) (queue.FairnessReport, error) {
	return queue.FairnessReport{}, errors.New("connection refused")
}

// TestFairnessReportRefusesAsThePublicRoutesDo: past the join limit 429
// with Retry-After; a store that does not answer 503 store_unavailable.
func TestFairnessReportRefusesAsThePublicRoutesDo(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)
	limited := startAPI(t, sys, producer.Config{JoinLimit: httpkit.RateLimit{PerSecond: 0.001, Burst: 1}})
	limited.do(t, http.MethodGet, "/v1/events/"+ev+"/fairness", nil, nil)
	if r := limited.do(t, http.MethodGet, "/v1/events/"+ev+"/fairness", nil, nil); r.status != http.StatusTooManyRequests || r.errorCode(t) != queue.CodeRateLimited || r.header.Get("Retry-After") == "" {
		t.Errorf("past the limit: %d %s", r.status, r.body)
	}
	down := startAPIWith(t, sys, producer.Config{}, func(d *producer.Deps) { d.Reports = failingReports{} })
	if r := down.do(t, http.MethodGet, "/v1/events/"+ev+"/fairness", nil, nil); r.status != http.StatusServiceUnavailable || r.errorCode(t) != queue.CodeStoreUnavailable {
		t.Errorf("store down: %d %s", r.status, r.body)
	}
}

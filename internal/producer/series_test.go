package producer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestEventSeries: the admin series route answers the slot monitor's
// samples of the last half hour, oldest first, with admissions a minute,
// validated against the OpenAPI document; an event not sampled yet has an
// empty list; an unknown event is 404, a bad id 400, no token 401.
func TestEventSeries(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, strict)
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":3,"admitPerMinute":60}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	series := func() queue.Series {
		t.Helper()
		r := e.do(t, http.MethodGet, "/v1/admin/events/"+ev+"/series", admin(), nil)
		var s queue.Series
		if r.status != http.StatusOK || json.Unmarshal(r.body, &s) != nil {
			t.Fatalf("series: %d %s", r.status, r.body)
		}
		return s
	}
	if s := series(); s.EventID != ev || s.PeriodMs != queue.SeriesPeriodMs || s.SpanMs != queue.SeriesSpanMs || len(s.Samples) != 0 {
		t.Fatalf("before any sample: %+v", s)
	}
	ctx := context.Background()
	now := time.Now().UnixMilli()
	if err := sys.Store.SampleSeries(ctx, []string{ev}, now-queue.SeriesPeriodMs); err != nil {
		t.Fatal(err)
	}
	var joins []queue.Message
	for i, u := range []string{"a", "b", "c", "d"} {
		joins = append(joins, queue.Message{V: queue.MessageVersion, Op: queue.OpJoin, EventID: ev, UserID: u, TS: now + int64(i), ID: u})
	}
	if _, err := sys.Store.Ingest(ctx, joins, now); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Store.Tick(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: now, AdmitBatch: 10}); err != nil {
		t.Fatal(err)
	}
	if err := sys.Store.SampleSeries(ctx, []string{ev}, now); err != nil {
		t.Fatal(err)
	}
	s := series()
	if len(s.Samples) != 2 {
		t.Fatalf("two periods sampled, got %+v", s.Samples)
	}
	first, last := s.Samples[0], s.Samples[1]
	if first.Capacity != 3 || first.AdmitPerMinute == nil || *first.AdmitPerMinute != 60 || first.AdmittedPerMinute != nil || last.At <= first.At {
		t.Fatalf("first sample %+v", first)
	}
	if last.Holders+last.Waiting != 4 || last.AdmittedPerMinute == nil || *last.AdmittedPerMinute != float64(last.AdmittedTotal)*60_000/float64(last.At-first.At) {
		t.Fatalf("last sample %+v (after 4 joins)", last)
	}
	for _, c := range []struct {
		path string
		hdr  map[string]string
		want int
		code queue.Code
	}{
		{"/v1/admin/events/nope-" + ev + "/series", admin(), http.StatusNotFound, queue.CodeEventNotFound},
		{"/v1/admin/events/bad%20id/series", admin(), http.StatusBadRequest, queue.CodeInvalidEventID},
		{"/v1/admin/events/" + ev + "/series", nil, http.StatusUnauthorized, queue.CodeUnauthorized},
	} {
		r := e.do(t, http.MethodGet, c.path, c.hdr, nil)
		if r.status != c.want || r.errorCode(t) != c.code {
			t.Errorf("GET %s: %d %s, want %d %s", c.path, r.status, r.body, c.want, c.code)
		}
	}
}

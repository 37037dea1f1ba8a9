package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

// TestSeriesSamplesOncePerPeriod: the first caller of a period takes the
// sample of every event (line, holders, capacity, admissions, the rate in
// force, the reports combined with the adaptive limits), later callers of
// the period change nothing, samples past the span are dropped, the read
// derives admissions a minute, and the series goes with the event.
func TestSeriesSamplesOncePerPeriod(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	fixed, adaptive := testenv.EventID(t)+"-f", testenv.EventID(t)+"-a"
	if _, err := s.PutEvent(ctx, queue.Event{ID: fixed, Capacity: 2, StaySeconds: 60, State: queue.StateOpen, Partitions: 1, AdmitPerMinute: 30}); err != nil {
		t.Fatal(err)
	}
	ad := queue.Adaptive{TargetLatencyMs: 400}.WithDefaults(600)
	if _, err := s.PutEvent(ctx, queue.Event{ID: adaptive, Capacity: 5, StaySeconds: 60, State: queue.StatePaused, Partitions: 1, AdmitPerMinute: 600, Adaptive: &ad}); err != nil {
		t.Fatal(err)
	}
	const t0 = int64(1_800_000_000_000) // a multiple of the period
	c.ZAdd(ctx, redisstore.WaitingKey(fixed), redis.Z{Member: "a", Score: 1}, redis.Z{Member: "b", Score: 2}, redis.Z{Member: "c", Score: 3})
	c.ZAdd(ctx, redisstore.HoldersKey(fixed), redis.Z{Member: "h", Score: float64(t0 + 60_000)}, redis.Z{Member: "gone", Score: float64(t0 - 1)})
	c.HSet(ctx, redisstore.StatsKey(fixed), "admittedTotal", 10)
	c.HSet(ctx, redisstore.ControlKey(adaptive), "effective", 120)
	for _, r := range []queue.HealthReport{
		{Reporter: "g1", WindowMs: 10_000, Requests: i64(100), P95Ms: f64(250), ErrorRate: f64(0.02)},
		{Reporter: "g2", WindowMs: 10_000, Requests: i64(300), P95Ms: f64(480), ErrorRate: f64(0.1)},
	} {
		if err := s.ReportHealth(ctx, adaptive, r, t0-1000); err != nil {
			t.Fatal(err)
		}
	}
	ids := []string{fixed, adaptive, "never-created"}
	if err := s.SampleSeries(ctx, ids, t0+1); err != nil {
		t.Fatal(err)
	}
	c.HSet(ctx, redisstore.StatsKey(fixed), "admittedTotal", 13)
	c.ZAdd(ctx, redisstore.WaitingKey(fixed), redis.Z{Member: "d", Score: 4})
	// Another gateway, later in the same period: nothing changes.
	if err := s.SampleSeries(ctx, ids, t0+9_999); err != nil {
		t.Fatal(err)
	}
	got, err := s.Series(ctx, fixed, t0+9_999)
	want := queue.SeriesSample{At: t0, State: queue.StateOpen, Waiting: 3, Holders: 1, Capacity: 2, AdmittedTotal: 10, AdmitPerMinute: i64(30)}
	if err != nil || len(got) != 1 || !sameSample(got[0], want) {
		t.Fatalf("fixed after one period: %+v, %v; want %+v", got, err, want)
	}
	got, err = s.Series(ctx, adaptive, t0+9_999)
	// The p95 is the highest reporter's, the errors the share over all
	// requests: (100*0.02 + 300*0.1) / 400.
	want = queue.SeriesSample{At: t0, State: queue.StatePaused, Capacity: 5, AdmitPerMinute: i64(120),
		P95Ms: f64(480), ErrorRate: f64(0.08), TargetLatencyMs: i64(400), MaxErrorRate: f64(queue.DefaultMaxErrorRate)}
	if err != nil || len(got) != 1 || !sameSample(got[0], want) {
		t.Fatalf("adaptive: %+v, %v; want %+v", got, err, want)
	}
	if n, _ := c.Exists(ctx, redisstore.SeriesKey("never-created")).Result(); n != 0 {
		t.Fatal("an unknown event got a series")
	}
	// The next period: a second sample, 3 admissions in 10 s = 18 a minute.
	if err := s.SampleSeries(ctx, ids, t0+10_000); err != nil {
		t.Fatal(err)
	}
	got, err = s.Series(ctx, fixed, t0+10_000)
	if err != nil || len(got) != 2 || got[0].AdmittedPerMinute != nil || got[1].AdmittedPerMinute == nil || *got[1].AdmittedPerMinute != 18 || got[1].Waiting != 4 {
		t.Fatalf("two periods: %+v, %v", got, err)
	}
	// Half an hour on: the first sample falls out of the span.
	later := t0 + queue.SeriesSpanMs + 5_000
	if err := s.SampleSeries(ctx, ids, later); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.ZCard(ctx, redisstore.SeriesKey(fixed)).Result(); n != 2 {
		t.Fatalf("after the span: %d samples stored, want 2 (the first trimmed)", n)
	}
	got, _ = s.Series(ctx, fixed, later)
	if len(got) != 2 || got[0].At != t0+10_000 || got[1].AdmittedPerMinute != nil {
		t.Fatalf("after the span: %+v (a gap has no rate)", got)
	}
	if ttl, _ := c.PTTL(ctx, redisstore.SeriesKey(fixed)).Result(); ttl <= 0 {
		t.Fatalf("the series key has no expiry: %v", ttl)
	}
	c.Del(ctx, redisstore.HoldersKey(fixed))
	if err := s.DeleteEvent(ctx, fixed, later); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, redisstore.SeriesKey(fixed)).Result(); n != 0 {
		t.Fatal("the series outlived its event")
	}
	if got, err := s.Series(ctx, fixed, later); err != nil || len(got) != 0 {
		t.Fatalf("deleted event's series: %+v, %v", got, err)
	}
}

// sameSample compares samples by value, pointers by what they point to
// (floats to within a millionth).
func sameSample(a, b queue.SeriesSample) bool {
	fl := func(x, y *float64) bool {
		return (x == nil) == (y == nil) && (x == nil || (*x-*y < 1e-6 && *y-*x < 1e-6))
	}
	in := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.At == b.At && a.State == b.State && a.Waiting == b.Waiting && a.Holders == b.Holders && a.Capacity == b.Capacity &&
		a.AdmittedTotal == b.AdmittedTotal && fl(a.AdmittedPerMinute, b.AdmittedPerMinute) && in(a.AdmitPerMinute, b.AdmitPerMinute) &&
		fl(a.P95Ms, b.P95Ms) && fl(a.ErrorRate, b.ErrorRate) && fl(a.Load, b.Load) && in(a.TargetLatencyMs, b.TargetLatencyMs) &&
		fl(a.MaxErrorRate, b.MaxErrorRate)
}

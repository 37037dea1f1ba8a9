package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
)

var _ queue.ReportStore = (*Store)(nil)

// statsReader reads the integer fields of an event's stats hash (0 when
// absent).
type statsReader map[string]string

func (st statsReader) num(field string) int64 {
	n, _ := strconv.ParseInt(st[field], 10, 64)
	return n
}

// histogram returns the counts of prefix0 … prefix(n-1): the ingest
// delays ("delay:") and the times in line ("wait:").
func (st statsReader) histogram(prefix string, n int) []int64 {
	counts := make([]int64, n)
	for i := range counts {
		counts[i] = st.num(prefix + strconv.Itoa(i))
	}
	return counts
}

// fairness is the stats' Fairness (the admin GET's figures).
func (st statsReader) fairness() queue.Fairness {
	return queue.Fairness{Inversions: st.num("inversions"), InversionPairs: st.num("orderPairs"), IngestDelayMs: queue.SummarizeDelays(st.histogram("delay:", queue.DelayBuckets))}
}

// FairnessReport reads id's fairness report at nowMs in one round trip
// (the counters order_lib.lua and ingest.lua keep; nothing is scanned;
// a chain draw's freeze, once, as FreezeDraw), or ErrEventNotFound.
func (s *Store) FairnessReport(ctx context.Context, id string, nowMs int64) (queue.FairnessReport, error) {
	return s.fairnessReport(ctx, id, nowMs, s.FreezeDraw)
}

// FairnessReportStep implements queue.StepStore: FairnessReport without a
// chain draw's steps, which its caller makes and records.
func (s *Store) FairnessReportStep(ctx context.Context, id string, nowMs int64) (queue.FairnessReport, error) {
	return s.fairnessReport(ctx, id, nowMs, nil)
}

func (s *Store) fairnessReport(ctx context.Context, id string, nowMs int64, step drawStep) (queue.FairnessReport, error) {
	var conf, stats *redis.MapStringStringCmd
	var prequeue *redis.IntCmd
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		conf = p.HGetAll(ctx, ConfigKey(id))
		stats = p.HGetAll(ctx, StatsKey(id))
		prequeue = p.ZCard(ctx, PrequeueKey(id))
		return nil
	})
	if err != nil {
		return queue.FairnessReport{}, fmt.Errorf("redisstore: fairness report %s: %w", id, err)
	}
	e, err := parseEvent(id, conf.Val())
	if err != nil {
		return queue.FairnessReport{}, err
	}
	// A chain draw's entries freeze at the first read past their time,
	// this one's as the public GET's (docs/api.md, "Ticket drops").
	if step != nil {
		if e.Chain, err = step(ctx, e, nowMs); err != nil {
			return queue.FairnessReport{}, err
		}
	}
	st := statsReader(stats.Val())
	r := queue.FairnessReport{
		EventID: id, Kind: "first-come", AdmittedTotal: st.num("admittedTotal"),
		Order:         queue.NewOrderReport(st.num("orderTotal"), st.num("orderPairs"), st.num("orderBeyond"), st.num("inversions")),
		IngestDelayMs: st.fairness().IngestDelayMs,
		TimeInLineMs:  queue.SummarizeWaits(st.histogram("wait:", queue.WaitBuckets)),
		LapsedTotal:   st.num("lapsedTotal"), ArrivedTotal: st.num("arrivedTotal"), NoShowTotal: st.num("noShowTotal"),
		Draw:       queue.NewDrawReport(e.DrawStatus(nowMs, prequeue.Val())),
		ServerTime: nowMs,
	}
	if r.Draw != nil {
		r.Kind = "drop"
	}
	return r, nil
}

// AdmittedOrder reads userID's own line of id's report: the place they
// were last admitted from and how many admitted before them joined after;
// ErrNotAdmitted when they are not among the admissions kept (order_lib.lua).
func (s *Store) AdmittedOrder(ctx context.Context, id, userID string) (queue.AdmittedOrder, error) {
	var place *redis.FloatCmd
	var count *redis.StringCmd
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		place = p.ZScore(ctx, OrderKey(id), userID)
		count = p.HGet(ctx, OvertakenKey(id), userID)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return queue.AdmittedOrder{}, fmt.Errorf("redisstore: admitted order %s: %w", id, err)
	}
	if errors.Is(place.Err(), redis.Nil) {
		return queue.AdmittedOrder{}, queue.ErrNotAdmitted
	}
	n, _ := strconv.ParseInt(count.Val(), 10, 64)
	o := queue.AdmittedOrder{EventID: id, UserID: userID, OvertakenBy: n}
	if at := int64(place.Val()); at >= 0 {
		o.JoinedAt = at
	} else {
		o.DrawnPlace = true
	}
	return o, nil
}

// Package testclient is producer-api's client for end-to-end tests: it
// creates events through the admin API, sends streams of joins while faults
// are injected, and reconciles what was acknowledged with the waiting line.
// A Stream is safe for concurrent use.
package testclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
)

// Producer is producer-api at Base (http://host:port).
type Producer struct {
	Base       string
	AdminToken string
}

var client = &http.Client{Timeout: 10 * time.Second}

// CreateEvent creates event id with the admin PUT body (JSON) and fails the
// test unless producer-api answers 201.
func (p Producer) CreateEvent(tb testing.TB, id, body string) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPut, p.Base+"/v1/admin/events/"+id, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatalf("create event %s: %v", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		tb.Fatalf("create event %s: %d %s", id, resp.StatusCode, b)
	}
}

// Refusal is a join producer-api answered with an error.
type Refusal struct {
	Status     int
	Code       string
	RetryAfter string
}

// Join sends one join of user to event. It returns the 202 body, or the
// refusal when producer-api answered an error; err is a transport error.
func (p Producer) Join(ctx context.Context, event, user string) (producer.JoinResponse, *Refusal, error) {
	return p.JoinWithKey(ctx, event, user, "")
}

// JoinWithKey is Join as one try of a join: it sends key as the join key,
// the Idempotency-Key ("": none), the same on every try of one join.
func (p Producer) JoinWithKey(ctx context.Context, event, user, key string) (producer.JoinResponse, *Refusal, error) {
	var j producer.JoinResponse
	body, ref, err := p.queue(ctx, http.MethodPost, event, user, key)
	if err != nil || ref != nil {
		return j, ref, err
	}
	if err := json.Unmarshal(body, &j); err != nil {
		return j, nil, fmt.Errorf("join %s: 202 with body %q: %w", user, body, err)
	}
	return j, nil, nil
}

// Leave sends one leave of user from event: nil, nil once producer-api
// answered 202.
func (p Producer) Leave(ctx context.Context, event, user string) (*Refusal, error) {
	_, ref, err := p.queue(ctx, http.MethodDelete, event, user, "")
	return ref, err
}

// queue sends a join (POST) or a leave (DELETE), with its join key ("": none),
// and returns the 202 body.
func (p Producer) queue(ctx context.Context, method, event, user, key string) ([]byte, *Refusal, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.Base+"/v1/events/"+event+"/queue", nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set(httpkit.UserHeader, user)
	if key != "" {
		req.Header.Set(producer.JoinKeyHeader, key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusAccepted {
		return nil, refusalOf(resp, body), nil
	}
	return body, nil, nil
}

// refusalOf reads producer-api's error answer resp, whose body is body.
func refusalOf(resp *http.Response, body []byte) *Refusal {
	var e httpkit.ErrorBody
	_ = json.Unmarshal(body, &e)
	return &Refusal{Status: resp.StatusCode, Code: string(e.Error.Code), RetryAfter: resp.Header.Get("Retry-After")}
}

// MustJoin joins user to event and fails the test unless it is answered 202.
func (p Producer) MustJoin(tb testing.TB, event, user string) producer.JoinResponse {
	tb.Helper()
	j, ref, err := p.Join(context.Background(), event, user)
	if err != nil || ref != nil {
		tb.Fatalf("join %s to %s: %v %+v", user, event, err, ref)
	}
	return j
}

// Stream is a steady stream of joins by distinct users.
type Stream struct {
	Sent, Acked atomic.Int64

	tb      testing.TB
	wg      sync.WaitGroup
	mu      sync.Mutex
	stamps  map[string]int64
	refused map[string]int // by error code
	errs    int
	// landable holds the users whose join may have landed unacknowledged:
	// answered 503 broker_unavailable (a publish timeout) or not at all
	// (docs/api.md). Such a user may stand in line; it is never lost.
	landable map[string]bool
}

// StartStream sends workers×perWorker joins to event, each worker pausing
// gap between its joins, and records the stamp of every join answered 202.
// Refusals and transport errors are counted, not failed: the test says
// which it expects.
func (p Producer) StartStream(tb testing.TB, event string, workers, perWorker int, gap time.Duration) *Stream {
	s := &Stream{tb: tb, stamps: map[string]int64{}, refused: map[string]int{}, landable: map[string]bool{}}
	for w := range workers {
		s.wg.Go(func() {
			for i := range perWorker {
				time.Sleep(gap)
				user := fmt.Sprintf("w%d-u%04d", w, i)
				s.Sent.Add(1)
				j, ref, err := p.Join(context.Background(), event, user)
				s.answered(user, j, ref, err)
			}
		})
	}
	return s
}

// answered counts the answer to a join of user: acknowledged with its
// stamp, refused (a 503 broker_unavailable may have landed), or no answer
// at all (may have landed too).
func (s *Stream) answered(user string, j producer.JoinResponse, ref *Refusal, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		s.errs++
		s.landable[user] = true
	case ref != nil:
		s.refused[fmt.Sprintf("%d %s", ref.Status, ref.Code)]++
		if ref.Status == http.StatusServiceUnavailable && ref.Code == string(queue.CodeBrokerUnavailable) {
			s.landable[user] = true
		}
	default:
		s.stamps[user] = j.JoinedAt
		s.Acked.Add(1)
	}
}

// Record counts the answer to a join sent outside the stream (Join's
// results), so that the reconciliation counts it as the stream's own.
func (s *Stream) Record(user string, j producer.JoinResponse, ref *Refusal, err error) {
	s.Sent.Add(1)
	s.answered(user, j, ref, err)
}

// Wait waits until every join of the stream was answered.
func (s *Stream) Wait() { s.wg.Wait() }

// Refused returns the refusals so far by "status code", and the number of
// transport errors.
func (s *Stream) Refused() (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.refused))
	for k, v := range s.refused {
		out[k] = v
	}
	return out, s.errs
}

// ExpectRefusals fails the test for every refusal whose "status code" (as
// Refused names them) is not among allowed, and for joins that got no
// answer at all.
func (s *Stream) ExpectRefusals(allowed ...string) {
	s.tb.Helper()
	refused, errs := s.Refused()
	for code, n := range refused {
		if !slices.Contains(allowed, code) {
			s.tb.Errorf("%d joins refused with %s (allowed: %v)", n, code, allowed)
		}
	}
	if errs > 0 {
		s.tb.Errorf("%d joins got no answer at all", errs)
	}
}

// acknowledgedIn counts the users of line and holders whose join was
// acknowledged.
func (s *Stream) acknowledgedIn(line []redis.Z, holders []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, z := range line {
		if _, ok := s.stamps[z.Member.(string)]; ok {
			n++
		}
	}
	for _, user := range holders {
		if _, ok := s.stamps[user]; ok {
			n++
		}
	}
	return n
}

// WaitForLine polls event's waiting line and slot holders in rdb until they
// hold every acknowledged join (or within passes), then checks that each
// user in line was acknowledged and carries its stamp as score, and that
// nobody both waits and holds a slot. A user whose join was answered 503
// broker_unavailable or not at all may stand in line or hold a slot
// unacknowledged, at a stamp nobody was told (the contract of
// docs/api.md); it is counted apart, never as found. An admitted user counts as found: the
// hold must outlast the test. It logs and returns how many acknowledged
// joins were found and how many were lost.
func (s *Stream) WaitForLine(rdb redis.UniversalClient, event string, within time.Duration) (found, lost int) {
	tb := s.tb
	tb.Helper()
	s.Wait()
	ctx := context.Background()
	var (
		line    []redis.Z
		holders []string
		landed  int
	)
	deadline := time.Now().Add(within)
	for {
		var err error
		line, err = rdb.ZRangeWithScores(ctx, redisstore.WaitingKey(event), 0, -1).Result()
		if err == nil {
			holders, err = rdb.ZRange(ctx, redisstore.HoldersKey(event), 0, -1).Result()
		}
		if err == nil && s.acknowledgedIn(line, holders) >= int(s.Acked.Load()) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool, len(line)+len(holders))
	for _, z := range line {
		user := z.Member.(string)
		seen[user] = true
		ts, ok := s.stamps[user]
		if !ok {
			if s.landable[user] {
				landed++
			} else {
				tb.Errorf("user %s is in line but was never acknowledged", user)
			}
			continue
		}
		if int64(z.Score) != ts {
			tb.Errorf("user %s has score %d, its stamp was %d", user, int64(z.Score), ts)
		}
		found++
	}
	for _, user := range holders {
		if seen[user] {
			tb.Errorf("user %s both waits and holds a slot", user)
			continue
		}
		if _, ok := s.stamps[user]; !ok {
			if s.landable[user] {
				landed++
			} else {
				tb.Errorf("user %s holds a slot but was never acknowledged", user)
			}
			continue
		}
		found++
	}
	lost = int(s.Acked.Load()) - found
	tb.Logf("joins sent %d, acknowledged %d, found in Redis %d (%d of them admitted), lost %d; refused %v, transport errors %d, landed unacknowledged %d",
		s.Sent.Load(), s.Acked.Load(), found, len(holders), lost, s.refused, s.errs, landed)
	return found, lost
}

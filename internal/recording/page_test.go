package recording_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestEventPageRoundTrip: an event's page is stored with its configuration,
// read back as written, carried by its config record (so a rebuild keeps
// it), and removed when the event is stored without one.
func TestEventPageRoundTrip(t *testing.T) {
	_, c := newStore(t)
	rec := &broker{}
	s := recording.New(mustNew(t, c, redisstore.Options{}), rec, testenv.Logger(t))
	ctx := context.Background()
	ev := testenv.EventID(t)
	page := &queue.Page{Title: "콘서트 <b>티켓</b>", Message: "기다려 주세요.\n\n탭을 열어 두세요.", LogoURL: "https://cdn.example/logo.png", AccentColor: "#c2185b", Template: "{{title}}: {{position}}", Locale: "ko"}
	e := queue.Event{ID: ev, Capacity: 2, StaySeconds: 60, State: queue.StateOpen, Partitions: 1, Page: page,
		Challenge: &queue.ChallengePolicy{Mode: queue.ChallengeFixed, Difficulty: 8}}
	if _, err := s.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := s.Event(ctx, ev)
	if err != nil || !reflect.DeepEqual(got.Page, page) || !reflect.DeepEqual(got.Challenge, e.Challenge) {
		t.Fatalf("read back %+v %+v, %v; want %+v", got.Page, got.Challenge, err, page)
	}
	recs := rec.records()
	if len(recs) != 1 || recs[0].Event == nil || !reflect.DeepEqual(recs[0].Event.Page, page) {
		t.Fatalf("config records %+v: the page is not in the log", recs)
	}
	e.Page = nil
	if _, err := s.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Event(ctx, ev); err != nil || got.Page != nil {
		t.Fatalf("after removing the page: %+v, %v", got.Page, err)
	}
}

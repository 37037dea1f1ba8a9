package producer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// resumeEnv is producer-api in trust mode over a line of ev (alice at 100,
// bob at 200, dave at 300, written straight to the store) on a clock the
// test moves.
type resumeEnv struct {
	*apiEnv
	ev    string
	clock *atomic.Int64
}

func startResume(t *testing.T, away string) resumeEnv {
	t.Helper()
	sys := testsys.Start(t, testsys.Options{})
	clock := &atomic.Int64{}
	clock.Store(time.Now().UnixMilli())
	e := startAPIAt(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken,
		AllowedOrigins: []string{"queue.example.com"}},
		func() time.Time { return time.UnixMilli(clock.Load()) })
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":1,"holdSeconds":120,"partitions":1,"state":"paused"`+away+`}`); r.status != http.StatusCreated {
		t.Fatalf("create event: %d %s", r.status, r.body)
	}
	for i, u := range []string{"alice", "bob", "dave"} {
		m := queue.NewMessage(queue.OpJoin, ev, u, int64(100*(i+1)))
		if _, err := sys.Store.Ingest(context.Background(), []queue.Message{m}, 1); err != nil {
			t.Fatal(err)
		}
	}
	return resumeEnv{apiEnv: e, ev: ev, clock: clock}
}

// link asks for user's resume link.
func (e resumeEnv) link(t *testing.T, user string) (producer.ResumeLinkResponse, reply) {
	t.Helper()
	h := map[string]string{httpkit.UserHeader: user, "Origin": "https://queue.example.com"}
	r := e.do(t, http.MethodPost, "/v1/events/"+e.ev+"/resume-link", h, nil)
	var l producer.ResumeLinkResponse
	if r.status == http.StatusOK {
		if err := json.Unmarshal(r.body, &l); err != nil {
			t.Fatal(err)
		}
	}
	return l, r
}

// resume uses token as user.
func (e resumeEnv) resume(t *testing.T, user, token string) reply {
	t.Helper()
	body, _ := json.Marshal(producer.ResumeBody{Token: token})
	return e.do(t, http.MethodPost, "/v1/events/"+e.ev+"/resume", map[string]string{httpkit.UserHeader: user, "Content-Type": "application/json"}, strings.NewReader(string(body)))
}

func (e resumeEnv) line(t *testing.T) string {
	t.Helper()
	return fmt.Sprint(e.sys.Waiting(e.ev))
}

func TestAResumeLinkMovesThePlaceOnce(t *testing.T) {
	e := startResume(t, `,"away":{"keepSeconds":1800,"claimSeconds":600}`)
	l, r := e.link(t, "bob")
	if r.status != http.StatusOK {
		t.Fatalf("resume-link: %d %s", r.status, r.body)
	}
	if want := "https://queue.example.com/?event=" + e.ev + "&resume=" + l.Token; l.URL != want {
		t.Errorf("url %q, want %q", l.URL, want)
	}
	if now := e.clock.Load(); l.ExpiresAt != now+1800_000 {
		t.Errorf("expiresAt %d, want the keep time from now (%d)", l.ExpiresAt, now+1800_000)
	}
	if !strings.HasPrefix(l.QRSVG, "<svg") || !strings.Contains(l.QRSVG, "<path") {
		t.Errorf("qrSvg %.60q… is not an SVG QR code", l.QRSVG)
	}
	r = e.resume(t, "carol", l.Token)
	if r.status != http.StatusOK {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	var got producer.ResumeResponse
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Moved || got.State != "waiting" || got.Position != 2 || got.UserID != "carol" {
		t.Errorf("resume answered %+v; want carol waiting second", got)
	}
	if tk, err := e.tickets.Verify(got.Ticket, e.ev, time.UnixMilli(e.clock.Load())); err != nil || tk.UserID != "carol" {
		t.Errorf("ticket %+v, %v; want carol's", tk, err)
	}
	if line := e.line(t); line != "[{alice 100} {carol 200} {dave 300}]" {
		t.Errorf("line after the move %s", line)
	}
	b, err := e.sys.Store.Status(context.Background(), e.ev, []string{"bob"}, e.clock.Load())
	if err != nil || b.Places[0].Turn != queue.TurnMoved {
		t.Errorf("bob after the move: %+v, %v; want moved", b.Places, err)
	}
	// carol's page asking again (a reload): the same answer.
	if r := e.resume(t, "carol", l.Token); r.status != http.StatusOK {
		t.Errorf("the link again by its new holder: %d %s", r.status, r.body)
	}
}

// Each bad use of a link gets its 4xx and changes nothing.
func TestABadResumeChangesNothing(t *testing.T) {
	e := startResume(t, "")
	other := testenv.EventID(t)
	if r := e.putEvent(t, other, `{"capacity":1,"holdSeconds":120,"partitions":1}`); r.status != http.StatusCreated {
		t.Fatalf("create event: %d %s", r.status, r.body)
	}
	sign := func(ev, user string, place int64, ttl time.Duration) string {
		return e.tickets.SignResume(queue.NewResume(ev, user, place, time.UnixMilli(e.clock.Load()), ttl))
	}
	l, r := e.link(t, "alice")
	if r.status != http.StatusOK {
		t.Fatalf("resume-link: %d %s", r.status, r.body)
	}
	if now := e.clock.Load(); l.ExpiresAt != now+queue.DefaultAwayKeepSeconds*1000 {
		t.Errorf("expiresAt %d, want the default away keep time from now", l.ExpiresAt)
	}
	used, _ := e.link(t, "dave")
	if r := e.resume(t, "erin", used.Token); r.status != http.StatusOK {
		t.Fatalf("first use: %d %s", r.status, r.body)
	}
	before := e.line(t)
	for _, tc := range []struct {
		name, user, token string
		status            int
		code              queue.Code
	}{
		{"forged", "carol", l.Token[:len(l.Token)-2] + "AA", http.StatusBadRequest, queue.CodeInvalidResume},
		{"a ticket, not a link", "carol", e.tickets.Sign(queue.Ticket{EventID: e.ev, UserID: "alice", JoinedAt: 100, Expires: e.clock.Load() + 1000}), http.StatusBadRequest, queue.CodeInvalidResume},
		{"for another event", "carol", sign(other, "alice", 100, time.Hour), http.StatusBadRequest, queue.CodeInvalidResume},
		{"expired", "carol", sign(e.ev, "alice", 100, -time.Millisecond), http.StatusGone, queue.CodeResumeExpired},
		{"used twice", "frank", used.Token, http.StatusConflict, queue.CodeResumeUsed},
		{"for another place", "carol", sign(e.ev, "alice", 150, time.Hour), http.StatusConflict, queue.CodePlaceChanged},
		{"new user already waiting", "bob", l.Token, http.StatusConflict, queue.CodeAlreadyQueued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.resume(t, tc.user, tc.token)
			if r.status != tc.status || r.errorCode(t) != tc.code {
				t.Fatalf("resume: %d %s; want %d %s", r.status, r.body, tc.status, tc.code)
			}
			if after := e.line(t); after != before {
				t.Fatalf("line %s after a refused resume, was %s", after, before)
			}
		})
	}
	if r := e.do(t, http.MethodPost, "/v1/events/"+e.ev+"/resume", map[string]string{httpkit.UserHeader: "carol", "Content-Type": "application/json"}, strings.NewReader(`{"token":`)); r.status != http.StatusBadRequest || r.errorCode(t) != queue.CodeInvalidBody {
		t.Errorf("a broken body: %d %s", r.status, r.body)
	}
	// alice left and joined again since the link: the link's place is gone.
	ctx := context.Background()
	for _, m := range []queue.Message{queue.NewMessage(queue.OpLeave, e.ev, "alice", 400), queue.NewMessage(queue.OpJoin, e.ev, "alice", 500)} {
		if _, err := e.sys.Store.Ingest(ctx, []queue.Message{m}, 1); err != nil {
			t.Fatal(err)
		}
	}
	before = e.line(t)
	if r := e.resume(t, "carol", l.Token); r.status != http.StatusConflict || r.errorCode(t) != queue.CodePlaceChanged {
		t.Errorf("a link to a place left: %d %s", r.status, r.body)
	}
	if after := e.line(t); after != before {
		t.Errorf("line %s after a refused resume, was %s", after, before)
	}
	if _, r := e.link(t, "zoe"); r.status != http.StatusConflict || r.errorCode(t) != queue.CodeNoPlace {
		t.Errorf("a link asked for by a user with no place: %d %s", r.status, r.body)
	}
	if !slices.Contains([]string{before}, e.line(t)) {
		t.Error("the line changed")
	}
}

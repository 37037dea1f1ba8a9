package producer_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/challenge"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testclient"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/jointoken"
)

// strict is producer-api as shipped: no X-User-Id trusted, the visitor
// cookie without Secure so that a Go cookie jar sends it over plain HTTP.
var strict = producer.Config{AdminToken: adminToken, CookieInsecure: true}

// TestVisitorIdentity: waitq issues the identity, HttpOnly, SameSite=Lax,
// Secure unless configured off; the cookie keeps it; a join without one, or
// with a forged or expired one, or named by X-User-Id alone, is refused and
// writes nothing; a join with it is the visitor's.
func TestVisitorIdentity(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	e := startAPIAt(t, sys, strict, func() time.Time { return time.Unix(0, clock.Load()) })
	sys.StartConsumer(sys.ConsumerConfig())
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":5}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	ctx := context.Background()

	// Secure by default: a plain config's cookie says so.
	secure := startAPI(t, sys, producer.Config{})
	r := secure.do(t, http.MethodPost, "/v1/visitor", nil, nil)
	ck := r.header.Get("Set-Cookie")
	if r.status != http.StatusCreated || !strings.Contains(ck, "waitq_visitor=") || !strings.Contains(ck, "HttpOnly") ||
		!strings.Contains(ck, "Secure") || !strings.Contains(ck, "SameSite=Lax") || !strings.Contains(ck, "Max-Age=") {
		t.Fatalf("POST /v1/visitor: %d Set-Cookie %q", r.status, ck)
	}

	v := testclient.NewVisitor(e.srv.URL)
	id, status, err := v.Identify(ctx)
	if err != nil || status != http.StatusCreated || !queue.IsVisitorID(id) {
		t.Fatalf("first visit: %q %d %v", id, status, err)
	}
	if again, status, _ := v.Identify(ctx); again != id || status != http.StatusOK {
		t.Fatalf("second visit: %q %d; want %q 200", again, status, id)
	}
	j, ref, err := v.Join(ctx, ev)
	if err != nil || ref != nil || j.UserID != id {
		t.Fatalf("join with the identity: %+v %+v %v", j, ref, err)
	}

	for _, c := range []struct {
		name string
		hdr  map[string]string
		want queue.Code
	}{
		{"nothing", nil, queue.CodeMissingIdentity},
		{"X-User-Id alone", user("alice"), queue.CodeMissingIdentity},
		{"forged cookie", map[string]string{"Cookie": "waitq_visitor=vis1.eyJ2IjoidjpBQUFBQUFBQUFBQUFBQUFBQUFBQUFBIiwieCI6OTk5OTk5OTk5OTk5OX0.AAAA"}, queue.CodeInvalidIdentity},
		{"garbage cookie", map[string]string{"Cookie": "waitq_visitor=%%%"}, queue.CodeInvalidIdentity},
		{"a ticket as the cookie", map[string]string{"Cookie": "waitq_visitor=" + e.tickets.Sign(queue.Ticket{EventID: ev, UserID: "v:AAAAAAAAAAAAAAAAAAAAAA", Expires: 1 << 60})}, queue.CodeInvalidIdentity},
	} {
		r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", c.hdr, nil)
		if r.status != http.StatusUnauthorized || r.errorCode(t) != c.want {
			t.Errorf("%s: %d %s; want 401 %s", c.name, r.status, r.body, c.want)
		}
	}
	// The identity ends: a join with it is refused, and /v1/visitor hands
	// out a new one.
	clock.Add(int64(queue.DefaultVisitorTTL + time.Minute))
	if _, ref, err := v.JoinWith(ctx, ev, nil); err != nil || ref == nil || ref.Code != string(queue.CodeInvalidIdentity) {
		t.Fatalf("join with an expired identity: %+v %v", ref, err)
	}
	if next, status, _ := v.Identify(ctx); status != http.StatusCreated || next == id {
		t.Fatalf("after the end: %q %d; want a new identity", next, status)
	}
	// Only the one acknowledged join reached the line.
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		n := sys.Store.Client().ZCard(ctx, "waitq:{"+ev+"}:waiting").Val()
		return n == 1, fmt.Sprintf("%d in line", n)
	})
}

// TestVisitorCookieIsHostOnly: over HTTPS the visitor cookie is
// __Host-waitq_visitor (Secure, Path=/, no Domain), which no sibling
// subdomain can set; a waitq_visitor cookie, which one can plant for the
// whole domain, is not read, whatever identity it carries.
func TestVisitorCookieIsHostOnly(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{AdminToken: adminToken})
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":5}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	r := e.do(t, http.MethodPost, "/v1/visitor", nil, nil)
	ck, err := http.ParseSetCookie(r.header.Get("Set-Cookie"))
	if err != nil || r.status != http.StatusCreated {
		t.Fatalf("POST /v1/visitor: %d %q %v", r.status, r.header.Get("Set-Cookie"), err)
	}
	if ck.Name != "__Host-waitq_visitor" || !ck.Secure || ck.Path != "/" || ck.Domain != "" {
		t.Fatalf("the visitor cookie %+v: want __Host-waitq_visitor, Secure, Path=/, no Domain", ck)
	}
	var planted producer.VisitorResponse
	if err := json.Unmarshal(r.body, &planted); err != nil {
		t.Fatal(err)
	}
	// A sibling subdomain plants the identity it holds, unprefixed.
	join := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", map[string]string{"Cookie": producer.InsecureVisitorCookie + "=" + ck.Value}, nil)
	if join.status != http.StatusUnauthorized || join.errorCode(t) != queue.CodeMissingIdentity {
		t.Fatalf("join with a planted waitq_visitor cookie: %d %s; want 401 missing_identity", join.status, join.body)
	}
	join = e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", map[string]string{"Cookie": ck.Name + "=" + ck.Value}, nil)
	if join.status != http.StatusAccepted || !strings.Contains(string(join.body), `"userId":"`+planted.VisitorID+`"`) {
		t.Fatalf("join with the host's own cookie: %d %s", join.status, join.body)
	}
}

// TestTrustUserHeader: behind an authenticating proxy X-User-Id names the
// user; without it a join is missing_user_id.
func TestTrustUserHeader(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: loopback, AdminToken: adminToken})
	ev := testenv.EventID(t)
	e.putEvent(t, ev, `{"capacity":5}`)
	if r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", user("alice"), nil); r.status != http.StatusAccepted || !strings.Contains(string(r.body), `"userId":"alice"`) {
		t.Fatalf("join as alice: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", nil, nil); r.status != http.StatusUnauthorized || r.errorCode(t) != queue.CodeMissingUserID {
		t.Fatalf("join with nothing: %d %s", r.status, r.body)
	}
	// A visit's key: well formed, taken; malformed, refused.
	if r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", map[string]string{"X-User-Id": "bob", producer.JoinKeyHeader: "v-123_abc"}, nil); r.status != http.StatusAccepted {
		t.Fatalf("join with a visit: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", map[string]string{"X-User-Id": "bob", producer.JoinKeyHeader: "no spaces"}, nil); r.status != http.StatusBadRequest || r.errorCode(t) != queue.CodeInvalidBody {
		t.Fatalf("join with a bad visit: %d %s", r.status, r.body)
	}
}

// TestTrustUserHeaderOnlyFromTrustedProxies: X-User-Id is believed from a
// trusted proxy alone: from any other peer it is ignored (the join needs a
// visitor identity), and trust mode without trusted proxies does not start.
func TestTrustUserHeaderOnlyFromTrustedProxies(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	// The proxy is elsewhere: the test client (127.0.0.1) is not it.
	e := startAPI(t, sys, producer.Config{TrustUserHeader: true, TrustedProxies: []string{"192.0.2.1"}, AdminToken: adminToken, CookieInsecure: true})
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":5}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/queue", "/challenge"} {
		if r := e.do(t, http.MethodPost, "/v1/events/"+ev+path, user("alice"), nil); r.status != http.StatusUnauthorized || r.errorCode(t) != queue.CodeMissingUserID {
			t.Fatalf("POST %s as alice from an untrusted peer: %d %s; want 401 missing_user_id", path, r.status, r.body)
		}
	}
	// The header ignored, the visitor identity names the user.
	v := testclient.NewVisitor(e.srv.URL)
	id, _, err := v.Identify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(e.srv.URL)
	var cookies []string
	for _, ck := range v.HTTP.Jar.Cookies(base) {
		cookies = append(cookies, ck.String())
	}
	r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", map[string]string{"X-User-Id": "alice", "Cookie": strings.Join(cookies, "; ")}, nil)
	if r.status != http.StatusAccepted || !strings.Contains(string(r.body), `"userId":"`+id+`"`) {
		t.Fatalf("join with a cookie and X-User-Id from an untrusted peer: %d %s; want %s's", r.status, r.body, id)
	}
	if _, err := producer.New(producer.Config{TrustUserHeader: true}, producer.Deps{Store: sys.Store}); err == nil || !strings.Contains(err.Error(), "WAITQ_TRUSTED_PROXIES") {
		t.Fatalf("trust mode without trusted proxies: %v", err)
	}
}

// TestTrustedHeaderCannotNameAVisitor: in trust mode X-User-Id may not
// name a visitor id (v:…): that would take over the visitor's place and
// ticket. Join, challenge and leave refuse it with invalid_user_id.
func TestTrustedHeaderCannotNameAVisitor(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	cfg := strict
	cfg.TrustUserHeader, cfg.TrustedProxies = true, loopback
	e := startAPI(t, sys, cfg)
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":5}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	ctx := context.Background()
	alice := testclient.NewVisitor(e.srv.URL)
	id, _, err := alice.Identify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if j, ref, err := alice.Join(ctx, ev); err != nil || ref != nil || j.UserID != id {
		t.Fatalf("the visitor's join: %+v %+v %v", j, ref, err)
	}
	for _, path := range []string{"/queue", "/challenge"} {
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			if path == "/challenge" && method == http.MethodDelete {
				continue
			}
			r := e.do(t, method, "/v1/events/"+ev+path, user(id), nil)
			if r.status != http.StatusBadRequest || r.errorCode(t) != queue.CodeInvalidUserID {
				t.Fatalf("%s %s as the visitor %s by X-User-Id: %d %s", method, path, id, r.status, r.body)
			}
		}
	}
}

// TestChallenge: an event that asks for a proof of work takes a join only
// with the solution of a challenge issued for it and the visitor, once.
func TestChallenge(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	e := startAPIAt(t, sys, strict, func() time.Time { return time.Unix(0, clock.Load()) })
	ev, other := testenv.EventID(t), testenv.EventID(t)+"-o"
	for _, id := range []string{ev, other} {
		if r := e.putEvent(t, id, `{"capacity":5,"challenge":{"mode":"fixed","difficulty":8}}`); r.status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", id, r.status, r.body)
		}
	}
	ctx := context.Background()
	alice, bob := testclient.NewVisitor(e.srv.URL), testclient.NewVisitor(e.srv.URL)
	for _, v := range []*testclient.Visitor{alice, bob} {
		if _, _, err := v.Identify(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := alice.Challenge(ctx, ev)
	if err != nil || !ch.Required || ch.Difficulty != 8 || ch.ExpiresAt <= time.Now().UnixMilli() {
		t.Fatalf("challenge: %+v %v", ch, err)
	}
	sol, err := challenge.Solve(ctx, ch.Challenge, nil)
	if err != nil {
		t.Fatal(err)
	}
	otherCh, _ := alice.Challenge(ctx, other)
	otherSol, _ := challenge.Solve(ctx, otherCh.Challenge, nil)
	refusals := []struct {
		name string
		v    *testclient.Visitor
		body *producer.JoinBody
		want queue.Code
	}{
		{"no body", alice, nil, queue.CodeChallengeRequired},
		{"no solution", alice, &producer.JoinBody{Challenge: ch.Challenge}, queue.CodeChallengeRequired},
		{"a wrong solution", alice, &producer.JoinBody{Challenge: ch.Challenge, Solution: "x"}, queue.CodeInvalidChallenge},
		{"another event's challenge", alice, &producer.JoinBody{Challenge: otherCh.Challenge, Solution: otherSol}, queue.CodeInvalidChallenge},
		{"another visitor's challenge", bob, &producer.JoinBody{Challenge: ch.Challenge, Solution: sol}, queue.CodeInvalidChallenge},
		{"a forged challenge", alice, &producer.JoinBody{Challenge: ch.Challenge[:len(ch.Challenge)-4] + "AAAA", Solution: sol}, queue.CodeInvalidChallenge},
	}
	for _, c := range refusals {
		if _, ref, err := c.v.JoinWith(ctx, ev, c.body); err != nil || ref == nil || ref.Code != string(c.want) {
			t.Errorf("%s: %+v %v; want %s", c.name, ref, err, c.want)
		}
	}
	// Bodies: too large (413), two objects, a wrong type (400); each
	// spends nothing.
	for _, c := range []struct {
		body string
		want queue.Code
	}{
		{`{"challenge":"` + strings.Repeat("a", 5000) + `","solution":"1"}`, queue.CodeBodyTooLarge},
		{`{"challenge":"c","solution":"1"}{}`, queue.CodeInvalidBody},
		{`{"challenge":1}`, queue.CodeInvalidBody},
	} {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v1/events/"+ev+"/queue", strings.NewReader(c.body))
		resp, err := alice.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var eb struct{ Error struct{ Code queue.Code } }
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if eb.Error.Code != c.want {
			t.Errorf("body %.40q…: %d %s; want %s", c.body, resp.StatusCode, eb.Error.Code, c.want)
		}
	}
	r := e.do(t, http.MethodPost, "/v1/events/"+ev+"/queue", nil, strings.NewReader(`{"challenge":1}`))
	if r.status != http.StatusUnauthorized { // no identity comes first
		t.Errorf("a bad body without identity: %d %s", r.status, r.body)
	}
	if _, ref, err := alice.JoinWith(ctx, ev, &producer.JoinBody{Challenge: ch.Challenge, Solution: sol}); err != nil || ref != nil {
		t.Fatalf("the solved challenge: %+v %v", ref, err)
	}
	if _, ref, _ := alice.JoinWith(ctx, ev, &producer.JoinBody{Challenge: ch.Challenge, Solution: sol}); ref == nil || ref.Status != http.StatusConflict || ref.Code != string(queue.CodeChallengeUsed) {
		t.Fatalf("the solution again: %+v; want 409 challenge_used", ref)
	}
	// Past its end, a solved challenge is refused.
	late, _ := bob.Challenge(ctx, ev)
	lateSol, _ := challenge.Solve(ctx, late.Challenge, nil)
	clock.Add(int64(6 * time.Minute))
	if _, ref, _ := bob.JoinWith(ctx, ev, &producer.JoinBody{Challenge: late.Challenge, Solution: lateSol}); ref == nil || ref.Code != string(queue.CodeInvalidChallenge) {
		t.Fatalf("an expired challenge: %+v", ref)
	}
	// The event's difficulty raised: a challenge issued before is below it.
	low, _ := bob.Challenge(ctx, ev)
	lowSol, _ := challenge.Solve(ctx, low.Challenge, nil)
	e.putEvent(t, ev, `{"challenge":{"mode":"fixed","difficulty":10}}`)
	time.Sleep(1100 * time.Millisecond) // the event cache
	if _, ref, _ := bob.JoinWith(ctx, ev, &producer.JoinBody{Challenge: low.Challenge, Solution: lowSol}); ref == nil || ref.Code != string(queue.CodeInvalidChallenge) {
		t.Fatalf("a challenge below the event's difficulty: %+v", ref)
	}
	if _, ref, err := bob.Join(ctx, ev); err != nil || ref != nil {
		t.Fatalf("bob's join at the new difficulty: %+v %v", ref, err)
	}
	// The admin GET counts what came through the door.
	r = e.do(t, http.MethodGet, "/v1/admin/events/"+ev, admin(), nil)
	var st queue.EventStatus
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatal(err)
	}
	d := st.Door
	// Issued: alice's, bob's late, low and last ones; refused: the wrong,
	// other event, other visitor, forged, expired and too easy solutions.
	if d.ChallengesIssued != 4 || d.ChallengesSolved != 2 || d.ChallengesRefused != 6 || d.Difficulty != 10 {
		t.Fatalf("door stats %+v; want 4 issued, 2 solved, 6 refused, difficulty 10", d)
	}
	// /metrics tells the same, per event.
	m := e.do(t, http.MethodGet, "/metrics", nil, nil)
	for _, want := range []string{
		fmt.Sprintf(`waitq_event_challenges_issued_total{event=%q} 4`, ev),
		fmt.Sprintf(`waitq_event_challenges_solved_total{event=%q} 2`, ev),
		fmt.Sprintf(`waitq_event_challenges_refused_total{event=%q} 6`, ev),
		fmt.Sprintf(`waitq_event_challenge_difficulty_bits{event=%q} 10`, ev),
		`waitq_challenges_total{outcome="replayed"} 1`,
	} {
		if !strings.Contains(string(m.body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// An event without a challenge says so.
	plain := testenv.EventID(t) + "-p"
	e.putEvent(t, plain, `{"capacity":5}`)
	if ch, err := alice.Challenge(ctx, plain); err != nil || ch.Required {
		t.Fatalf("a plain event's challenge: %+v %v", ch, err)
	}
}

// TestChallengeTooEasyForTheSurge: an adaptive event's challenge fetched
// in the calm is not spent in the surge: a join needs the difficulty in
// force when it is spent, less one bit (a challenge issued a moment before
// the rate doubled still passes), and is otherwise refused
// challenge_too_easy; a fresh challenge joins.
func TestChallengeTooEasyForTheSurge(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	var clock atomic.Int64
	start := time.Now().Truncate(10 * time.Second) // a door window's start
	clock.Store(start.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	e := startAPIAt(t, sys, strict, now)
	ev := testenv.EventID(t)
	if r := e.putEvent(t, ev, `{"capacity":100,"challenge":{"mode":"adaptive","minDifficulty":2,"maxDifficulty":12,"joinsPerSecond":1}}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	ctx := context.Background()
	solved := func(v *testclient.Visitor, want int) *producer.JoinBody {
		t.Helper()
		ch, err := v.Challenge(ctx, ev)
		if err != nil || ch.Difficulty != want {
			t.Fatalf("challenge: %+v %v; want difficulty %d", ch, err, want)
		}
		sol, err := challenge.Solve(ctx, ch.Challenge, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &producer.JoinBody{Challenge: ch.Challenge, Solution: sol}
	}
	// joins counts n joins through the door at the test's now, as other
	// replicas' would be.
	spent := 0
	joins := func(n int) {
		t.Helper()
		for range n {
			spent++
			sp := queue.Spend{Kind: queue.SpendJoinToken, ID: fmt.Sprint("other-", spent), Until: now().Add(time.Hour)}
			if used, err := sys.Store.Spend(ctx, ev, []queue.Spend{sp}, now()); err != nil || used != "" {
				t.Fatalf("a join through the door: %q %v", used, err)
			}
		}
	}
	alice, bob := testclient.NewVisitor(e.srv.URL), testclient.NewVisitor(e.srv.URL)
	for _, v := range []*testclient.Visitor{alice, bob} {
		if _, _, err := v.Identify(ctx); err != nil {
			t.Fatal(err)
		}
	}
	calm := solved(alice, 2) // the calm: the minimum
	// The surge: 40 joins in the window, 4 a second: 2 + 3 bits in force.
	joins(40)
	clock.Add(int64(2 * time.Second)) // past the replica's cached rate
	_, ref, err := alice.JoinWith(ctx, ev, calm)
	if err != nil || ref == nil || ref.Status != http.StatusUnauthorized || ref.Code != string(queue.CodeChallengeTooEasy) {
		t.Fatalf("the calm's challenge in the surge: %+v %v; want 401 challenge_too_easy", ref, err)
	}
	// One bit of slack: issued at 5 bits, spent when 6 are in force.
	justBefore := solved(bob, 5)
	joins(40) // 8 a second
	clock.Add(int64(2 * time.Second))
	if _, ref, err := bob.JoinWith(ctx, ev, justBefore); err != nil || ref != nil {
		t.Fatalf("a challenge one doubling old: %+v %v; want it taken", ref, err)
	}
	if _, ref, err := alice.JoinWith(ctx, ev, solved(alice, 6)); err != nil || ref != nil {
		t.Fatalf("a fresh challenge: %+v %v", ref, err)
	}
}

// TestChallengeReplayAcrossReplicas: a solution spent on one producer-api
// replica is refused by another (the spend is in Redis).
func TestChallengeReplayAcrossReplicas(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	issuer, err := challenge.NewIssuer([][]byte{[]byte(strings.Repeat("k", 32))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	shared := func(d *producer.Deps) { d.Challenges = issuer }
	a, b := startAPIWith(t, sys, strict, shared), startAPIWith(t, sys, strict, shared)
	ev := testenv.EventID(t)
	a.putEvent(t, ev, `{"capacity":5,"challenge":{"mode":"fixed","difficulty":6}}`)
	ctx := context.Background()
	v := testclient.NewVisitor(a.srv.URL)
	v.Identify(ctx)
	ch, _ := v.Challenge(ctx, ev)
	sol, _ := challenge.Solve(ctx, ch.Challenge, nil)
	body := &producer.JoinBody{Challenge: ch.Challenge, Solution: sol}
	if _, ref, err := v.JoinWith(ctx, ev, body); err != nil || ref != nil {
		t.Fatalf("join on a: %+v %v", ref, err)
	}
	v.Base = b.srv.URL // the same cookie (127.0.0.1) on the other replica
	if _, ref, _ := v.JoinWith(ctx, ev, body); ref == nil || ref.Code != string(queue.CodeChallengeUsed) {
		t.Fatalf("the solution on b: %+v; want challenge_used", ref)
	}
}

// failingPublisher is a broker that acknowledges nothing.
type failingPublisher struct{ queue.Publisher }

func (failingPublisher) Publish(context.Context, queue.Message) error {
	return errors.New("no broker answers")
}

// TestUnacknowledgedJoinGivesItsProofsBack: a join the broker did not
// acknowledge spends neither its challenge nor its one-time join token.
func TestUnacknowledgedJoinGivesItsProofsBack(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	issuer, err := challenge.NewIssuer([][]byte{[]byte(strings.Repeat("k", 32))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := startAPIWith(t, sys, strict, func(d *producer.Deps) { d.Challenges = issuer })
	down := startAPIWith(t, sys, strict, func(d *producer.Deps) {
		d.Challenges, d.Publisher = issuer, failingPublisher{d.Publisher}
	})
	ev := testenv.EventID(t)
	key := jointoken.Key{ID: "k1", Alg: jointoken.HS256, Secret: []byte(strings.Repeat("s", 32))}
	body := fmt.Sprintf(`{"capacity":5,"challenge":{"mode":"fixed","difficulty":6},"joinToken":{"required":true,"keys":[{"kid":"k1","alg":"HS256","secret":%q}]}}`,
		base64.RawURLEncoding.EncodeToString(key.Secret))
	if r := e.putEvent(t, ev, body); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	tok, err := jointoken.Mint(key, jointoken.Claims{Subject: "acct-1", EventID: ev, Expiry: time.Now().Add(time.Hour), ID: "once-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v := testclient.NewVisitor(down.srv.URL)
	v.JoinToken = tok
	ch, err := v.Challenge(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	sol, _ := challenge.Solve(ctx, ch.Challenge, nil)
	jb := &producer.JoinBody{Challenge: ch.Challenge, Solution: sol}
	if _, ref, _ := v.JoinWith(ctx, ev, jb); ref == nil || ref.Code != string(queue.CodeBrokerUnavailable) {
		t.Fatalf("join with no broker: %+v", ref)
	}
	v.Base = e.srv.URL
	j, ref, err := v.JoinWith(ctx, ev, jb)
	if err != nil || ref != nil || j.UserID != "acct-1" {
		t.Fatalf("the same proofs once the broker answers: %+v %+v %v", j, ref, err)
	}
}

// TestJoinTokens: an invite-only event takes joins only with a join token
// of one of its keys, for it, unexpired; the account is the user; a
// one-time token is taken once; keys rotate.
func TestJoinTokens(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, strict)
	ev, other := testenv.EventID(t), testenv.EventID(t)+"-o"
	hs := jointoken.Key{ID: "hs1", Alg: jointoken.HS256, Secret: []byte(strings.Repeat("h", 32))}
	pub, priv, _ := ed25519.GenerateKey(nil)
	ed := jointoken.Key{ID: "ed1", Alg: jointoken.EdDSA, PublicKey: pub, PrivateKey: priv}
	policy := fmt.Sprintf(`{"required":true,"keys":[{"kid":"hs1","alg":"HS256","secret":%q},{"kid":"ed1","alg":"EdDSA","publicKey":%q}]}`,
		base64.RawURLEncoding.EncodeToString(hs.Secret), base64.RawURLEncoding.EncodeToString(pub))
	if r := e.putEvent(t, ev, `{"capacity":5,"joinToken":`+policy+`}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	e.putEvent(t, other, `{"capacity":5}`)
	now := time.Now()
	mint := func(k jointoken.Key, sub, event string, exp time.Time, jti string) string {
		t.Helper()
		s, err := jointoken.Mint(k, jointoken.Claims{Subject: sub, EventID: event, Expiry: exp, ID: jti})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	join := func(event, tok string) reply {
		hdr := map[string]string{}
		if tok != "" {
			hdr[producer.JoinTokenHeader] = tok
		}
		return e.do(t, http.MethodPost, "/v1/events/"+event+"/queue", hdr, nil)
	}
	stranger := jointoken.Key{ID: "hs1", Alg: jointoken.HS256, Secret: []byte(strings.Repeat("x", 32))}
	for _, c := range []struct {
		name, event, tok string
		want             queue.Code
	}{
		{"no token", ev, "", queue.CodeJoinTokenRequired},
		{"garbage", ev, "not.a.token", queue.CodeInvalidJoinToken},
		{"signed with another secret", ev, mint(stranger, "alice", ev, now.Add(time.Hour), ""), queue.CodeInvalidJoinToken},
		{"for another event", ev, mint(hs, "alice", other, now.Add(time.Hour), ""), queue.CodeInvalidJoinToken},
		{"expired", ev, mint(hs, "alice", ev, now.Add(-time.Hour), ""), queue.CodeInvalidJoinToken},
		{"a visitor id as the account", ev, mint(hs, "v:AAAAAAAAAAAAAAAAAAAAAA", ev, now.Add(time.Hour), ""), queue.CodeInvalidJoinToken},
		{"a bad account id", ev, mint(hs, "al ice", ev, now.Add(time.Hour), ""), queue.CodeInvalidJoinToken},
		{"to an event that takes none", other, mint(hs, "alice", other, now.Add(time.Hour), ""), queue.CodeInvalidJoinToken},
	} {
		if r := join(c.event, c.tok); r.status != http.StatusUnauthorized || r.errorCode(t) != c.want {
			t.Errorf("%s: %d %s; want 401 %s", c.name, r.status, r.body, c.want)
		}
	}
	for _, k := range []jointoken.Key{hs, ed} {
		r := join(ev, mint(k, "acct-"+k.ID, ev, now.Add(time.Hour), ""))
		if r.status != http.StatusAccepted || !strings.Contains(string(r.body), `"userId":"acct-`+k.ID+`"`) {
			t.Errorf("a %s token: %d %s", k.Alg, r.status, r.body)
		}
	}
	once := mint(hs, "carol", ev, now.Add(time.Hour), "invite-42")
	if r := join(ev, once); r.status != http.StatusAccepted {
		t.Fatalf("a one-time token: %d %s", r.status, r.body)
	}
	if r := join(ev, once); r.status != http.StatusConflict || r.errorCode(t) != queue.CodeJoinTokenUsed {
		t.Fatalf("the one-time token again: %d %s", r.status, r.body)
	}
	// A one-time token about to expire, taken now: past its exp it still
	// verifies through the leeway (jointoken.Leeway), so it must still be
	// remembered as taken then.
	brief := mint(hs, "frank", ev, time.Now().Add(time.Second), "invite-43")
	if r := join(ev, brief); r.status != http.StatusAccepted {
		t.Fatalf("a one-time token about to expire: %d %s", r.status, r.body)
	}
	// Rotation: the EdDSA key removed, its tokens are refused at once (the
	// event cache aside); the HS256 key's still join.
	e.putEvent(t, ev, fmt.Sprintf(`{"joinToken":{"required":true,"keys":[{"kid":"hs1","alg":"HS256","secret":%q}]}}`, base64.RawURLEncoding.EncodeToString(hs.Secret)))
	time.Sleep(1100 * time.Millisecond)
	if r := join(ev, brief); r.status != http.StatusConflict || r.errorCode(t) != queue.CodeJoinTokenUsed {
		t.Errorf("the one-time token again past its exp, within the leeway: %d %s; want 409 join_token_used", r.status, r.body)
	}
	if r := join(ev, mint(ed, "dave", ev, now.Add(time.Hour), "")); r.status != http.StatusUnauthorized {
		t.Errorf("a removed key's token: %d %s", r.status, r.body)
	}
	if r := join(ev, mint(hs, "erin", ev, now.Add(time.Hour), "")); r.status != http.StatusAccepted {
		t.Errorf("the kept key's token: %d %s", r.status, r.body)
	}
}

// TestDoorConfigRefusals: bad challenge and join-token settings are
// refused with invalid_config and change nothing.
func TestDoorConfigRefusals(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, strict)
	ev := testenv.EventID(t)
	e.putEvent(t, ev, `{"capacity":5}`)
	for _, body := range []string{
		`{"challenge":{"mode":"sometimes"}}`,
		`{"challenge":{"mode":"fixed","difficulty":99}}`,
		`{"challenge":{"mode":"adaptive","minDifficulty":20,"maxDifficulty":10}}`,
		`{"challenge":{"mode":"fixed","difficulty":8,"extra":1}}`,
		`{"challenge":"fixed"}`,
		`{"joinToken":{"required":true,"keys":[]}}`,
		`{"joinToken":{"keys":[{"kid":"k","alg":"HS256","secret":"c2hvcnQ"}]}}`,
		`{"joinToken":{"keys":[{"kid":"k","alg":"none","secret":"` + strings.Repeat("A", 43) + `"}]}}`,
		`{"joinToken":{"keys":[{"kid":"k","alg":"EdDSA","publicKey":"AAAA"}]}}`,
	} {
		if r := e.putEvent(t, ev, body); r.status != http.StatusBadRequest || r.errorCode(t) != queue.CodeInvalidConfig {
			t.Errorf("%s: %d %s; want 400 invalid_config", body, r.status, r.body)
		}
	}
	r := e.do(t, http.MethodGet, "/v1/admin/events/"+ev, admin(), nil)
	if strings.Contains(string(r.body), `"challenge"`) || strings.Contains(string(r.body), `"joinToken"`) {
		t.Fatalf("a refused change was kept: %s", r.body)
	}
	// null removes a policy.
	e.putEvent(t, ev, `{"challenge":{"mode":"fixed","difficulty":8}}`)
	e.putEvent(t, ev, `{"challenge":null}`)
	if r := e.do(t, http.MethodGet, "/v1/admin/events/"+ev, admin(), nil); strings.Contains(string(r.body), `"challenge"`) {
		t.Fatalf("challenge null kept it: %s", r.body)
	}
}

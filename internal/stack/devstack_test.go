package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testclient"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testws"
)

// TestDevstackRunsTheJoinPath starts the dev stack as a newcomer would, with
// a redis-server child and, with no redis-server on PATH, with miniredis;
// joins the demo event over HTTP and sees the join reach the line.
func TestDevstackRunsTheJoinPath(t *testing.T) {
	for _, redisKind := range []string{"redis-server", "miniredis"} {
		t.Run(redisKind, func(t *testing.T) {
			if redisKind == "redis-server" {
				if _, err := exec.LookPath("redis-server"); err != nil {
					testenv.Unavailable(t, "redis-server not on PATH")
				}
			} else {
				t.Setenv("PATH", "")
			}
			d := &Devstack{
				ProducerAddr: testenv.FreeAddr(t), GatewayAddr: testenv.FreeAddr(t), IngestAddr: testenv.FreeAddr(t),
				AdminToken: "devstack-test-token", DemoEvent: "demo", DemoDrop: "drop",
				DemoShop: "shop", DemoMembers: "members", ShopAddr: testenv.FreeAddr(t),
			}
			var out testenv.Buffer
			d.out = &out
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- d.Run(ctx, testenv.Logger(t)) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("devstack stopped with %v", err)
				}
			}()

			base := "http://" + d.ProducerAddr
			testenv.Eventually(t, 30*time.Second, func() (bool, string) {
				return strings.Contains(out.String(), "devstack is running"), "no welcome printed"
			})
			if !strings.Contains(out.String(), redisKind) {
				t.Errorf("welcome does not name %s:\n%s", redisKind, out.String())
			}
			if !strings.Contains(out.String(), "the operators' console http://"+d.GatewayAddr+"/admin.html") {
				t.Errorf("welcome does not give the console's address:\n%s", out.String())
			}
			// The demo events are branded: their waiting rooms show a
			// title in Korean.
			for _, ev := range []string{"demo", "drop", "shop"} {
				resp, err := http.Get(base + "/v1/events/" + ev)
				if err != nil {
					t.Fatal(err)
				}
				var pub struct{ Page *queue.Page }
				err = json.NewDecoder(resp.Body).Decode(&pub)
				resp.Body.Close()
				if err != nil || pub.Page == nil || pub.Page.Title == "" || pub.Page.Locale != "ko" {
					t.Errorf("the demo event %s's page: %+v %v", ev, pub.Page, err)
				}
			}
			// A visitor gets an identity (a cookie) and joins with it: the
			// devstack trusts no X-User-Id.
			alice := testclient.NewVisitor(base)
			if _, status, err := alice.Identify(ctx); err != nil || status != http.StatusCreated {
				t.Fatalf("a visitor identity: %d %v", status, err)
			}
			j, ref, err := alice.Join(ctx, "demo")
			if err != nil || ref != nil {
				t.Fatalf("join the demo event: %v %+v", err, ref)
			}
			req, _ := http.NewRequest(http.MethodPost, base+"/v1/events/demo/queue", nil)
			req.Header.Set("X-User-Id", "mallory")
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("a join named by X-User-Id alone: %v %v; want 401", resp, err)
			}
			// The statusUrl leads to the gateway, which admits alice at its
			// next monitor tick (capacity 10).
			ws, err := testws.Dial(t, "ws://"+d.GatewayAddr+j.StatusURL, nil)
			if err != nil {
				t.Fatalf("watch over WebSocket: %v", err)
			}
			ws.Admitted(15 * time.Second)
			testenv.Eventually(t, 20*time.Second, func() (bool, string) {
				var st queue.EventStatus
				if err := adminGet(base, d.AdminToken, "demo", &st); err != nil {
					return false, err.Error()
				}
				return st.Holders == 1 && st.Capacity == 10, fmt.Sprintf("demo event %+v", st)
			})

			// The demo shop sits behind the guard: a visitor without a token
			// is sent to the waiting room with the page as returnTo.
			noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := noFollow.Get("http://" + d.ShopAddr + "/product/1")
			if err != nil {
				t.Fatalf("the demo shop: %v", err)
			}
			resp.Body.Close()
			want := "http://" + d.GatewayAddr + "/?event=shop&returnTo=" + url.QueryEscape("http://"+d.ShopAddr+"/product/1")
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want {
				t.Errorf("the demo shop without a token: %d %q, want 302 to %q", resp.StatusCode, resp.Header.Get("Location"), want)
			}

			// The members' presale: alice signs in at the shop (through the
			// guard, which lets the sign-in pass), its presale link mints
			// her a join token, and the waiting room joins with it as her
			// account, once: the token is one-time.
			req, _ = http.NewRequest(http.MethodPost, "http://"+d.ShopAddr+"/signin", strings.NewReader("account=alice"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err = noFollow.Do(req)
			if err != nil || resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("sign in at the shop: %v %v", resp, err)
			}
			resp.Body.Close()
			req, _ = http.NewRequest(http.MethodGet, "http://"+d.ShopAddr+"/presale", nil)
			for _, c := range resp.Cookies() {
				req.AddCookie(c)
			}
			resp, err = noFollow.Do(req)
			if err != nil || resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("the presale link: %v %v", resp, err)
			}
			resp.Body.Close()
			room, err := url.Parse(resp.Header.Get("Location"))
			if err != nil || room.Query().Get("event") != "members" || room.Query().Get("joinToken") == "" {
				t.Fatalf("the presale link leads to %q", resp.Header.Get("Location"))
			}
			member := testclient.NewVisitor(base)
			member.JoinToken = room.Query().Get("joinToken")
			if j, ref, err := member.Join(ctx, "members"); err != nil || ref != nil || j.UserID != "alice" {
				t.Fatalf("join the presale with the shop's token: %+v %+v %v", j, ref, err)
			}
			if _, ref, _ := member.Join(ctx, "members"); ref == nil || ref.Code != string(queue.CodeJoinTokenUsed) {
				t.Fatalf("the one-time token again: %+v", ref)
			}
			if _, ref, _ := testclient.NewVisitor(base).Join(ctx, "members"); ref == nil || ref.Code != string(queue.CodeJoinTokenRequired) {
				t.Fatalf("the presale without a token: %+v", ref)
			}

			// The shop's event is adaptive: the guard's health reports
			// reach its controller, which admits at its start rate.
			testenv.Eventually(t, 20*time.Second, func() (bool, string) {
				var st queue.EventStatus
				if err := adminGet(base, d.AdminToken, "shop", &st); err != nil {
					return false, err.Error()
				}
				c := st.Control
				ok := len(st.Health) == 1 && st.Health[0].Requests != nil && c != nil && !c.SignalLost && c.AdmitPerMinute > 0 && c.Signal != nil
				return ok, fmt.Sprintf("shop event: health %+v control %+v", st.Health, c)
			})

			// The demo drop gathers its pre-queue, opening a minute after
			// the start, its commitment published and its seed not. It asks
			// for a solved challenge: a join without one is refused, the
			// visitor's solved one is taken.
			bob := testclient.NewVisitor(base)
			if _, _, err := bob.Identify(ctx); err != nil {
				t.Fatal(err)
			}
			if _, ref, err := bob.JoinWith(ctx, "drop", nil); err != nil || ref == nil || ref.Code != string(queue.CodeChallengeRequired) {
				t.Fatalf("a join of the drop without a challenge: %v %+v; want challenge_required", err, ref)
			}
			if _, ref, err := bob.Join(ctx, "drop"); err != nil || ref != nil {
				t.Fatalf("join the demo drop's pre-queue: %v %+v", err, ref)
			}
			testenv.Eventually(t, 20*time.Second, func() (bool, string) {
				resp, err := http.Get(base + "/v1/events/drop")
				if err != nil {
					return false, err.Error()
				}
				defer resp.Body.Close()
				var pe producer.PublicEvent
				_ = json.NewDecoder(resp.Body).Decode(&pe)
				ok := pe.Phase == queue.PhasePrequeue && pe.Draw != nil && len(pe.Draw.Commitment) == 64 && pe.Draw.Seed == "" &&
					pe.Draw.PrequeueSize == 1 && pe.OpensAt-pe.ServerTime <= time.Minute.Milliseconds()
				return ok, fmt.Sprintf("demo drop %+v %+v", pe, pe.Draw)
			})
		})
	}
}

// adminGet reads event id's admin status from producer-api at base into st.
func adminGet(base, token, id string, st *queue.EventStatus) error {
	req, err := http.NewRequest(http.MethodGet, base+"/v1/admin/events/"+id, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET event %s: %s", id, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(st)
}

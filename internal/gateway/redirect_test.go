package gateway_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/entry"
)

// TestAdmittedFrameSendsTheUserOn: with a targetUrl, the admitted frame
// carries where to go with the entry token: the socket's returnTo when it
// lies under the target's origin, else the target itself; without a
// targetUrl it carries nothing.
func TestAdmittedFrameSendsTheUserOn(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startGateway(t, sys, slow, nil)
	ctx := context.Background()
	shop, plain := testenv.EventID(t)+"-shop", testenv.EventID(t)+"-plain"
	for _, ev := range []queue.Event{
		{ID: shop, Capacity: 10, StaySeconds: 60, State: queue.StateOpen, Partitions: 1, TargetURL: "https://shop.example/sale"},
		{ID: plain, Capacity: 10, StaySeconds: 60, State: queue.StateOpen, Partitions: 1},
	} {
		if _, err := sys.Store.PutEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		event, user, returnTo, wantPrefix string
	}{
		{shop, "back-to-product", "https://shop.example/product/7?size=m", "https://shop.example/product/7?size=m&waitq_token="},
		{shop, "no-return", "", "https://shop.example/sale?waitq_token="},
		{shop, "evil-return", "https://evil.example/phish", "https://shop.example/sale?waitq_token="},
		{shop, "scheme-relative", "//evil.example", "https://shop.example/sale?waitq_token="},
		{plain, "no-target", "https://shop.example/x", ""},
	} {
		c, err := e.dialURL(t, "/queue-status/"+tc.event+"?ticket="+e.ticket(tc.event, tc.user)+"&returnTo="+url.QueryEscape(tc.returnTo))
		if err != nil {
			t.Fatalf("%s: %v", tc.user, err)
		}
		// Straight into the line (the join path is tested elsewhere).
		now := e.clock.Now().UnixMilli()
		if _, err := sys.Store.Ingest(ctx, []queue.Message{queue.NewMessage(queue.OpJoin, tc.event, tc.user, now)}, now); err != nil {
			t.Fatal(err)
		}
		e.gw.MonitorTick(ctx)
		f := c.Admitted(10 * time.Second)
		if tc.wantPrefix == "" {
			if f.RedirectURL != "" {
				t.Errorf("%s: redirect %q for an event without a target", tc.user, f.RedirectURL)
			}
			continue
		}
		u, err := url.Parse(f.RedirectURL)
		if err != nil || len(f.RedirectURL) < len(tc.wantPrefix) || f.RedirectURL[:len(tc.wantPrefix)] != tc.wantPrefix {
			t.Fatalf("%s: redirect %q, want it to start with %q", tc.user, f.RedirectURL, tc.wantPrefix)
		}
		if tok := u.Query().Get(entry.TokenParam); tok != f.EntryToken {
			t.Errorf("%s: the redirect carries token %q, the frame %q", tc.user, tok, f.EntryToken)
		}
	}
}

package redisstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// dueMails is DueMails of ev at now.
func dueMails(t *testing.T, s *redisstore.Store, ev string, now int64) []queue.Mail {
	t.Helper()
	ms, err := s.DueMails(context.Background(), []string{ev}, now)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestAddressesRefuseWithoutAPlaceAndPastTheCap: an address is kept only
// for someone with a place, at most MaxUsersPerAddress times per event
// (whatever its case), and each refusal changes nothing.
func TestAddressesRefuseWithoutAPlaceAndPastTheCap(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putAwayLine(t, s, ev, 1, 6)
	if err := s.SetAddress(ctx, ev, "nobody", "a@example.com"); queue.ErrorCode(err) != queue.CodeNoPlace {
		t.Fatalf("no place: %v", err)
	}
	if err := s.SetAddress(ctx, "no-such-event", "u0", "a@example.com"); err != queue.ErrEventNotFound {
		t.Fatalf("no event: %v", err)
	}
	for i, u := range []string{"u0", "u1", "u2"} {
		addr := []string{"a@example.com", "A@Example.com", "a@EXAMPLE.com"}[i]
		if err := s.SetAddress(ctx, ev, u, addr); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	if err := s.SetAddress(ctx, ev, "u3", "a@example.COM"); queue.ErrorCode(err) != queue.CodeEmailLimit {
		t.Fatalf("a fourth user of one address: %v", err)
	}
	// The same user again, and a change of their address, are no new user.
	if err := s.SetAddress(ctx, ev, "u0", "A@example.com"); err != nil {
		t.Fatalf("u0 again: %v", err)
	}
	if err := s.SetAddress(ctx, ev, "u0", "b@example.com"); err != nil {
		t.Fatalf("u0 changes: %v", err)
	}
	if err := s.SetAddress(ctx, ev, "u3", "a@example.com"); err != nil {
		t.Fatalf("u3 once u0 left the address: %v", err)
	}
	if n, _ := c.HGet(ctx, redisstore.AddressCountKey(ev), "a@example.com").Int(); n != 3 {
		t.Fatalf("count %d; want 3", n)
	}
	if ok, err := s.RemoveAddress(ctx, ev, "u3"); !ok || err != nil {
		t.Fatalf("remove: %v %v", ok, err)
	}
	if ok, _ := s.RemoveAddress(ctx, ev, "u3"); ok {
		t.Fatal("removed twice")
	}
	if n, _ := c.HLen(ctx, redisstore.AddressesKey(ev)).Result(); n != 3 {
		t.Fatalf("%d addresses; want 3", n)
	}
	if err := s.DeleteEvent(ctx, ev, 1); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, redisstore.AddressesKey(ev), redisstore.AddressCountKey(ev)).Result(); n != 0 {
		t.Fatalf("the addresses outlived their event (%d keys)", n)
	}
}

// TestDueMailsEarlyThenCallThenForgotten: the early mail goes once at
// notifyAhead, the call mail once with the place the call left and the end
// of the window, then the address is gone; the address of someone admitted
// is forgotten.
func TestDueMailsEarlyThenCallThenForgotten(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	e := queue.Event{ID: ev, Capacity: 1, StaySeconds: 10, State: queue.StateOpen, Partitions: 1, Away: queue.DefaultAway()}
	e.Away.NotifyAhead = 2
	if _, err := s.PutEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Event(ctx, ev); !got.Away.On() || got.Away.NotifyAhead != 2 {
		t.Fatalf("away read back: %+v", got.Away)
	}
	join(t, s, ev, 0, 5, 1) // u0…u4 stamped 1…5
	for _, u := range []string{"u0", "u4"} {
		if err := s.SetAddress(ctx, ev, u, u+"@example.com"); err != nil {
			t.Fatal(err)
		}
	}
	const now = 1_000_000
	ms := dueMails(t, s, ev, now)
	if len(ms) != 1 || ms[0].UserID != "u0" || ms[0].Kind != queue.MailEarly || ms[0].Place != 1 || ms[0].Ahead != 0 || ms[0].Address != "u0@example.com" {
		t.Fatalf("first mails: %+v; want u0's early mail", ms)
	}
	if ms := dueMails(t, s, ev, now); len(ms) != 0 {
		t.Fatalf("the early mail went twice: %+v", ms)
	}
	// u0 is away when their turn comes: called, mailed once, forgotten.
	c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u0", Score: now - graceMs - 1})
	if r := awayTick(t, s, ev, now, 1); !slices.Equal(r.Called, []string{"u0"}) {
		t.Fatalf("tick: %+v", r)
	}
	// u1 was admitted: u4 now has two ahead (u2, u3), and is mailed early.
	ms = dueMails(t, s, ev, now)
	if len(ms) != 2 || ms[0].UserID != "u0" || ms[0].Kind != queue.MailCall || ms[0].Place != 1 || ms[0].Until != now+600_000 ||
		ms[1].UserID != "u4" || ms[1].Kind != queue.MailEarly || ms[1].Ahead != 2 || ms[1].Place != 5 {
		t.Fatalf("after the call: %+v; want u0's call mail and u4's early mail", ms)
	}
	if ok, _ := c.HExists(ctx, redisstore.AddressesKey(ev), "u0").Result(); ok {
		t.Fatal("the address outlived its last mail")
	}
	// u4 leaves: their address is forgotten by a later call.
	leave := queue.Message{V: 1, Op: queue.OpLeave, EventID: ev, UserID: "u4", TS: now, ID: "x"}
	if _, err := s.Ingest(ctx, []queue.Message{leave}, 0); err != nil {
		t.Fatal(err)
	}
	if ms := dueMails(t, s, ev, now+2); len(ms) != 0 {
		t.Fatalf("mails for someone gone: %+v", ms)
	}
	if n, _ := c.Exists(ctx, redisstore.AddressesKey(ev), redisstore.AddressCountKey(ev)).Result(); n != 0 {
		t.Fatalf("addresses of people gone are kept (%d keys)", n)
	}
}

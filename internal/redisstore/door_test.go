package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestSpendCountsOnceAllOrNone: a spent proof is refused until it would
// have expired; a join carrying one spent and one fresh proof marks
// neither; an unspent proof may be sent again; the door counts joins and
// solved challenges, and the event's deletion takes the keys.
func TestSpendCountsOnceAllOrNone(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 2, 10, 0)
	now := time.UnixMilli(1_000_000)
	ch := queue.Spend{Kind: queue.SpendChallenge, ID: "abc", Until: now.Add(time.Minute)}
	jt := queue.Spend{Kind: queue.SpendJoinToken, ID: "t1", Until: now.Add(time.Hour)}
	if used, err := s.Spend(ctx, ev, []queue.Spend{ch}, now); err != nil || used != "" {
		t.Fatalf("first spend: %q %v", used, err)
	}
	used, err := s.Spend(ctx, ev, []queue.Spend{jt, ch}, now.Add(time.Second))
	if err != nil || used != ch.Member() {
		t.Fatalf("replayed spend: %q %v; want %q", used, err, ch.Member())
	}
	if n := c.ZCard(ctx, redisstore.SpentKey(ev)).Val(); n != 1 {
		t.Fatalf("a refused spend marked its other proof: %d spent", n)
	}
	// Past its until and the keep, the challenge's id is free again (it
	// could not be sent anyway: the challenge itself expired), and trimmed.
	if used, err := s.Spend(ctx, ev, []queue.Spend{jt}, now.Add(2*time.Minute+redisstore.SpentKeep)); err != nil || used != "" {
		t.Fatalf("spend after the challenge expired: %q %v", used, err)
	}
	if n := c.ZCard(ctx, redisstore.SpentKey(ev)).Val(); n != 1 {
		t.Fatalf("expired spends not trimmed: %d", n)
	}
	if err := s.Unspend(ctx, ev, []queue.Spend{jt}); err != nil {
		t.Fatal(err)
	}
	if used, _ := s.Spend(ctx, ev, []queue.Spend{jt}, now.Add(3*time.Minute+redisstore.SpentKeep)); used != "" {
		t.Fatalf("an unspent join token is refused: %q", used)
	}
	st, err := s.DoorStats(ctx, ev, now.Add(3*time.Minute))
	if err != nil || st.ChallengesSolved != 1 {
		t.Fatalf("door stats %+v %v", st, err)
	}
	if _, err := s.Spend(ctx, ev+"-none", []queue.Spend{jt}, now); !errors.Is(err, queue.ErrEventNotFound) {
		t.Fatalf("unknown event: %v", err)
	}
	if err := s.DeleteEvent(ctx, ev, now.Add(4*time.Minute).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, redisstore.SpentKey(ev), redisstore.DoorKey(ev)).Val(); n != 0 {
		t.Fatalf("deleting the event left %d door keys", n)
	}
}

// TestSpentOnceAcrossSkewedReplicas: two replicas whose clocks are apart
// (by less than SpentKeep) share the spent proofs. A proof spent through
// the replica whose clock runs ahead, then its trimming there past the
// proof's end, leave it spent for the replica behind, which still takes
// the proof as unexpired: spent twice otherwise.
func TestSpentOnceAcrossSkewedReplicas(t *testing.T) {
	_, c := newStore(t)
	fast, slow := mustNew(t, c, redisstore.Options{}), mustNew(t, c, redisstore.Options{})
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, fast, ev, 2, 10, 0)
	skew := 20 * time.Second // the fast replica's clock is this far ahead
	slowNow := time.UnixMilli(5_000_000)
	fastNow := func() time.Time { return slowNow.Add(skew) }
	ch := queue.Spend{Kind: queue.SpendChallenge, ID: "skewed", Until: fastNow().Add(time.Second)}
	if used, err := fast.Spend(ctx, ev, []queue.Spend{ch}, fastNow()); err != nil || used != "" {
		t.Fatalf("first spend through the fast replica: %q %v", used, err)
	}
	// Another join through the fast replica, after the proof's end by its
	// clock: it trims the spent proofs.
	slowNow = slowNow.Add(5 * time.Second)
	other := queue.Spend{Kind: queue.SpendJoinToken, ID: "other", Until: fastNow().Add(time.Hour)}
	if used, err := fast.Spend(ctx, ev, []queue.Spend{other}, fastNow()); err != nil || used != "" {
		t.Fatalf("another spend: %q %v", used, err)
	}
	// By the slow replica's clock the proof has not ended: it is spent.
	if !slowNow.Before(ch.Until) {
		t.Fatal("the test's clocks: the proof ended for the slow replica too")
	}
	if used, err := slow.Spend(ctx, ev, []queue.Spend{ch}, slowNow); err != nil || used != ch.Member() {
		t.Fatalf("the proof again through the slow replica: %q %v; want it refused as %q", used, err, ch.Member())
	}
}

// TestDoorJoinRate: the join rate is read over a sliding ten-second
// window; issued and refused challenges are counted.
func TestDoorJoinRate(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putLine(t, s, ev, 2, 10, 0)
	start := time.UnixMilli(2_000_000) // a window's start
	for i := range 50 {
		sp := queue.Spend{Kind: queue.SpendJoinToken, ID: string(rune('a'+i%26)) + string(rune('a'+i/26)), Until: start.Add(time.Hour)}
		if used, err := s.Spend(ctx, ev, []queue.Spend{sp}, start.Add(time.Duration(i)*100*time.Millisecond)); err != nil || used != "" {
			t.Fatalf("spend %d: %q %v", i, used, err)
		}
	}
	// 50 joins in the first five seconds of a window.
	st, err := s.ChallengeIssued(ctx, ev, start.Add(5*time.Second))
	if err != nil || st.ChallengesIssued != 1 || st.JoinsPerSecond != 5 {
		t.Fatalf("at 5 s: %+v %v; want 1 issued, 5 joins/s", st, err)
	}
	// Halfway through the next window, half the previous one counts.
	if st, _ := s.DoorStats(ctx, ev, start.Add(15*time.Second)); st.JoinsPerSecond != 2.5 {
		t.Fatalf("at 15 s: %+v; want 2.5 joins/s", st)
	}
	if st, _ := s.DoorStats(ctx, ev, start.Add(25*time.Second)); st.JoinsPerSecond != 0 {
		t.Fatalf("at 25 s: %+v; want 0 joins/s", st)
	}
	if err := s.ChallengeRefused(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.DoorStats(ctx, ev, start); st.ChallengesRefused != 1 {
		t.Fatalf("refused not counted: %+v", st)
	}
}

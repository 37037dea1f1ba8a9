package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// moveNow is the clock of the move tests.
const moveNow = 1_000_000

// linkOf is a resume link of user's place in ev as it stands.
func linkOf(t *testing.T, s *redisstore.Store, ev, user string) queue.Resume {
	t.Helper()
	held, err := s.Holding(context.Background(), ev, user)
	if err != nil {
		t.Fatal(err)
	}
	return queue.NewResume(ev, user, held.Score, time.UnixMilli(moveNow), time.Hour)
}

// mustMove moves r's place to to at now.
func mustMove(t *testing.T, s *redisstore.Store, r queue.Resume, to string, now int64) queue.Moved {
	t.Helper()
	m, err := s.Move(context.Background(), queue.Move{Resume: r, To: to, NowMs: now})
	if err != nil {
		t.Fatalf("move %s's place to %s: %v", r.UserID, to, err)
	}
	return m
}

func TestAMoveGivesTheSamePlaceToTheNewUser(t *testing.T) {
	s, _ := newStore(t)
	ev := testenv.EventID(t)
	putAwayLine(t, s, ev, 0, 4) // capacity 0: nobody admitted
	// A gateway follows u2 (behind the place that moves) and u0 (ahead).
	tr := gateway.NewRounds(s, true)
	ctx := context.Background()
	if _, err := tr.Status(ctx, ev, []string{"u0", "u1", "u2"}, moveNow); err != nil {
		t.Fatal(err)
	}
	r := linkOf(t, s, ev, "u1")
	m := mustMove(t, s, r, "b", moveNow+1)
	if m.Score != 2 || m.ClaimUntil != 0 || m.Same || m.Again {
		t.Fatalf("moved %+v; want place 2 in line", m)
	}
	if p := placeOf(t, s, ev, "b", moveNow+2); p.Rank != 1 {
		t.Fatalf("b after the move: %+v; want u1's rank 1", p)
	}
	if p := placeOf(t, s, ev, "u1", moveNow+2); p.Turn != queue.TurnMoved || p.Rank != -1 {
		t.Fatalf("u1 after the move: %+v; want moved", p)
	}
	b, err := tr.Status(ctx, ev, []string{"u0", "u1", "u2", "b"}, moveNow+3)
	if err != nil {
		t.Fatal(err)
	}
	want := []queue.Place{{Rank: 0, StayUntil: -1}, {Rank: -1, StayUntil: 0, Turn: queue.TurnMoved}, {Rank: 2, StayUntil: -1}, {Rank: 1, StayUntil: -1}}
	for i, p := range b.Places {
		if p != want[i] {
			t.Errorf("tracker's place %d: %+v; want %+v", i, p, want[i])
		}
	}
	// A retry of u1's old join queues nobody: their served mark covers it.
	if r := join(t, s, ev, 1, 2, 2); r.Joined != 0 {
		t.Fatalf("u1's old join after the move: %+v; want no place", r)
	}
	// The same link asked again by b: the same move, nothing changed.
	if again := mustMove(t, s, r, "b", moveNow+5); !again.Again || again.Score != 2 {
		t.Fatalf("the link again by b: %+v; want the same move", again)
	}
	if p := placeOf(t, s, ev, "b", moveNow+6); p.Rank != 1 {
		t.Fatalf("b after the link again: %+v", p)
	}
}

func TestAMoveCarriesACalledTurn(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	ev := testenv.EventID(t)
	putAwayLine(t, s, ev, 1, 3)
	c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u0", Score: moveNow - graceMs - 1})
	awayTick(t, s, ev, moveNow, 10) // u0 called, u1 admitted
	r := linkOf(t, s, ev, "u0")
	m := mustMove(t, s, r, "b", moveNow+1)
	if m.ClaimUntil != moveNow+600_000 || m.Score != 1 {
		t.Fatalf("moved %+v; want the called turn of place 1", m)
	}
	if p := placeOf(t, s, ev, "b", moveNow+2); p.Turn != moveNow+600_000 {
		t.Fatalf("b after the move: %+v; want the turn", p)
	}
	if p := placeOf(t, s, ev, "u0", moveNow+2); p.Turn != queue.TurnMoved {
		t.Fatalf("u0 after the move: %+v; want moved", p)
	}
	// b read back: claimed ahead of u2 when u1's hold ends.
	if r := awayTick(t, s, ev, moveNow+10_000, 10); len(r.Admitted) != 1 || r.Admitted[0] != "b" {
		t.Fatalf("tick: %+v; want b admitted", r)
	}
}

// Every bad use of a link is refused with its code, and changes nothing.
func TestABadMoveChangesNothing(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, ev string) (queue.Resume, string)
		code  queue.Code
	}{
		{"used twice", func(t *testing.T, ev string) (queue.Resume, string) {
			r := linkOf(t, s, ev, "u1")
			mustMove(t, s, r, "b", moveNow)
			return r, "c"
		}, queue.CodeResumeUsed},
		{"used twice by its own user", func(t *testing.T, ev string) (queue.Resume, string) {
			r := linkOf(t, s, ev, "u1")
			if m := mustMove(t, s, r, "u1", moveNow); !m.Same {
				t.Fatalf("own link: %+v; want same", m)
			}
			return r, "u1"
		}, queue.CodeResumeUsed},
		{"place left and joined again", func(t *testing.T, ev string) (queue.Resume, string) {
			r := linkOf(t, s, ev, "u1")
			leave(t, s, ev, "u1", moveNow)
			join(t, s, ev, 1, 2, moveNow+1)
			return r, "b"
		}, queue.CodePlaceChanged},
		{"place admitted", func(t *testing.T, ev string) (queue.Resume, string) {
			r := linkOf(t, s, ev, "u0")
			c.HSet(ctx, redisstore.ConfigKey(ev), "capacity", 1)
			awayTick(t, s, ev, moveNow, 10)
			return r, "b"
		}, queue.CodePlaceChanged},
		{"place swept", func(t *testing.T, ev string) (queue.Resume, string) {
			r := linkOf(t, s, ev, "u1")
			c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u1", Score: 1})
			awayTick(t, s, ev, moveNow+31*60_000, 10)
			return r, "b"
		}, queue.CodePlaceChanged},
		{"place lapsed", func(t *testing.T, ev string) (queue.Resume, string) {
			c.HSet(ctx, redisstore.ConfigKey(ev), "capacity", 1)
			c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Member: "u0", Score: moveNow - graceMs - 1})
			awayTick(t, s, ev, moveNow, 10)
			r := linkOf(t, s, ev, "u0")
			awayTick(t, s, ev, moveNow+600_001, 10)
			return r, "b"
		}, queue.CodePlaceChanged},
		{"another place", func(t *testing.T, ev string) (queue.Resume, string) {
			r := linkOf(t, s, ev, "u1")
			r.Place++
			return r, "b"
		}, queue.CodePlaceChanged},
		{"new user waiting already", func(t *testing.T, ev string) (queue.Resume, string) {
			return linkOf(t, s, ev, "u1"), "u2"
		}, queue.CodeAlreadyQueued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := testenv.EventID(t)
			putAwayLine(t, s, ev, 0, 3)
			r, to := tc.setup(t, ev)
			before := dumpEvent(t, c, ev)
			_, err := s.Move(ctx, queue.Move{Resume: r, To: to, NowMs: moveNow + 40*60_000})
			if queue.ErrorCode(err) != tc.code {
				t.Fatalf("move: %v; want %s", err, tc.code)
			}
			if after := dumpEvent(t, c, ev); after != before {
				t.Fatalf("a refused move changed the state:\n%s\nwant\n%s", after, before)
			}
		})
	}
}

// leave applies user's leave at ts.
func leave(t *testing.T, s *redisstore.Store, ev, user string, ts int64) {
	t.Helper()
	m := queue.Message{V: 1, Op: queue.OpLeave, EventID: ev, UserID: user, TS: ts, ID: "l"}
	if _, err := s.Ingest(context.Background(), []queue.Message{m}, ts); err != nil {
		t.Fatal(err)
	}
}

// dumpEvent is the line's, turns' and moves' keys of ev as text (the
// spent links' trimming aside).
func dumpEvent(t *testing.T, c *redis.Client, ev string) string {
	t.Helper()
	ctx := context.Background()
	var out string
	for _, k := range []string{redisstore.WaitingKey(ev), redisstore.ServedKey(ev), redisstore.CalledKey(ev), redisstore.MovedKey(ev),
		redisstore.HoldersKey(ev), redisstore.ResumesKey(ev)} {
		zs, err := c.ZRangeWithScores(ctx, k, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		out += k + ":" + formatZ(zs) + "\n"
	}
	h, _ := c.HGetAll(ctx, redisstore.CallPlacesKey(ev)).Result()
	n, _ := c.LLen(ctx, redisstore.JournalKey(ev)).Result()
	return out + formatAny(h) + formatAny(n)
}

func formatZ(zs []redis.Z) string { return fmt.Sprint(zs) }

func formatAny(v any) string { return fmt.Sprintln(v) }

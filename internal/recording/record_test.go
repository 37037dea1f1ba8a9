package recording_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// broker is a Recorder over a broker that may be down: while it is, every
// write fails; once up, it keeps the records it is given.
type broker struct {
	mu   sync.Mutex
	down bool
	log  []queue.Message
}

func (b *broker) Record(_ context.Context, msgs []queue.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		return errors.New("no broker answers")
	}
	b.log = append(b.log, msgs...)
	return nil
}

func (b *broker) setDown(down bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down = down
}

func (b *broker) records() []queue.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.log)
}

// duringOutage returns a store without a recorder and rs, a store over the
// same Redis whose recorder's broker is down, and an event of the given
// capacity and holds of 60 s with users u0… stamped 1… in line.
func duringOutage(t *testing.T, capacity, users int) (s *redisstore.Store, rs *recording.Store, c *redis.Client, ev string, rec *broker) {
	t.Helper()
	s, c = newStore(t)
	ev = testenv.EventID(t)
	rec = &broker{down: true}
	rs = recording.New(mustNew(t, c, redisstore.Options{}), rec, testenv.Logger(t))
	putLine(t, s, ev, capacity, 60, users)
	return s, rs, c, ev, rec
}

// TestOutageLongerThanAHoldSpendsNoTurn is the reproduction: with
// every record write failing (no broker answers) for longer than one hold,
// the admitted users were never recorded, so never told; their holds must
// not end as "your turn came and passed", and the next users must not be
// admitted and dropped the same way. Nobody loses a turn they were never
// told of: once the broker answers again the admissions are recorded and
// told, with a whole stay from then on.
func TestOutageLongerThanAHoldSpendsNoTurn(t *testing.T) {
	s, rs, c, ev, rec := duringOutage(t, 2, 4) // u0…u3 stamped 1…4
	ctx := context.Background()

	const t0 = int64(1_000_000)
	for _, at := range []int64{0, 5_000, 61_000, 66_000, 122_000} {
		if r := tick(t, rs, ev, t0+at, 10); len(r.Admitted) != 0 {
			t.Fatalf("tick at t+%d ms told %v while no record could be written", at, r.Admitted)
		}
	}

	who := []string{"u0", "u1", "u2", "u3"}
	b, err := s.Status(ctx, ev, who, t0+122_000)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range b.Places {
		if p.StayUntil == 0 {
			t.Errorf("%s is told the hold ended (%+v) though never told of an admission", who[i], p)
		}
	}
	// u0 and u1 are admitted, not yet told (the next ones); u2 and u3 wait
	// at their own places.
	want := []queue.Place{{Rank: 0, StayUntil: -1}, {Rank: 0, StayUntil: -1}, {Rank: 0, StayUntil: -1}, {Rank: 1, StayUntil: -1}}
	if !slices.Equal(b.Places, want) {
		t.Errorf("places after the outage %+v, want %+v", b.Places, want)
	}
	if got := line(t, c, ev); len(got) != 2 || got[0].Member != "u2" || got[0].Score != 3 || got[1].Member != "u3" || got[1].Score != 4 {
		t.Errorf("line after the outage %v, want u2 (3) and u3 (4) at their own places", got)
	}
	// A new join of an admitted user not yet told (its end of hold passed)
	// neither queues them twice nor gives them a second place.
	if res, err := s.Ingest(ctx, []queue.Message{msg(queue.OpJoin, ev, "u0", t0+123_000)}, t0+123_000); err != nil || res.Joined != 0 {
		t.Errorf("a join of an unrecorded holder: %+v %v; want it ignored", res, err)
	}
	if t.Failed() {
		t.FailNow()
	}

	// The broker answers again: the next tick records u0 and u1 and tells
	// them, with a whole stay from now.
	rec.setDown(false)
	now := t0 + 124_000
	r := tick(t, rs, ev, now, 10)
	if r.Recovered != 2 || len(r.Admitted) != 0 || r.Holders != 2 || r.Waiting != 2 {
		t.Fatalf("tick once the broker answers: %+v; want u0 and u1 recorded, nobody else admitted", r)
	}
	b, err = s.Status(ctx, ev, who, now)
	if err != nil {
		t.Fatal(err)
	}
	end := now + 60_000
	want = []queue.Place{{Rank: -1, StayUntil: end}, {Rank: -1, StayUntil: end}, {Rank: 0, StayUntil: -1}, {Rank: 1, StayUntil: -1}}
	if !slices.Equal(b.Places, want) {
		t.Fatalf("places once recorded %+v, want %+v", b.Places, want)
	}
	var admits []string
	for _, m := range rec.records() {
		switch m.Op {
		case queue.OpAdmit:
			admits = append(admits, m.UserID)
			if m.ExpiresAt != end {
				t.Errorf("admit record of %s ends its hold at %d, want %d", m.UserID, m.ExpiresAt, end)
			}
		case queue.OpExpire:
			t.Errorf("expire record of %s: an unrecorded hold ended", m.UserID)
		}
	}
	if slices.Sort(admits); !slices.Equal(admits, []string{"u0", "u1"}) {
		t.Errorf("admit records %v, want u0 and u1", admits)
	}
}

// TestSweepDuringAnOutageIsRecordedLater: a sweep made while no record can
// be written leaves nothing in Redis to find it again (unlike an
// admission, which stays unrecorded): the Store keeps its record and
// writes it with the next records once the broker answers, so a rebuild
// does not bring the swept user back.
func TestSweepDuringAnOutageIsRecordedLater(t *testing.T) {
	_, rs, c, ev, rec := duringOutage(t, 1, 3) // u0…u2 stamped 1…3
	ctx := context.Background()
	if err := c.ZAdd(ctx, redisstore.SeenKey(ev), redis.Z{Score: 100, Member: "u2"}).Err(); err != nil {
		t.Fatal(err)
	}
	sweep := func(now int64) queue.TickResult {
		t.Helper()
		res, err := rs.Tick(ctx, queue.TickRequest{EventIDs: []string{ev}, NowMs: now, PresenceCutoffMs: 500, SweepLimit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	if r := sweep(1000); !slices.Equal(r.Swept, []string{"u2"}) {
		t.Fatalf("tick during the outage swept %v, want u2", r.Swept)
	}
	rec.setDown(false)
	sweep(2000) // nothing new to record: the kept sweep is written
	var swept []queue.Message
	for _, m := range rec.records() {
		if m.Op == queue.OpSweep {
			swept = append(swept, m)
		}
	}
	if len(swept) != 1 || swept[0].UserID != "u2" || swept[0].Score != 3 || swept[0].TS != 1000 {
		t.Fatalf("sweep records once the broker answers %+v, want u2's, of its place 3, made at 1000", swept)
	}
	sweep(3000)
	if n := len(rec.records()); n != 1 {
		t.Errorf("the log holds %d records after another tick, want the sweep's once", n)
	}
}

package rebuild_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestRebuildSetsTheAppliedOffsets: a rebuild marks each partition applied
// up to the end it read, so a consumer that then reads the log from an
// earlier committed offset changes nothing, and what comes after is
// applied.
func TestRebuildSetsTheAppliedOffsets(t *testing.T) {
	e := newEnv(t, 10)
	for i := range 12 {
		e.sys.Join(e.ev, user(i), int64(1000+i))
	}
	e.sys.Leave(e.ev, user(0), 2000) // replayed alone, its join would queue again for a moment
	res, err := e.rebuilder().Rebuild(e.ctx, e.ev)
	if err != nil {
		t.Fatal(err)
	}
	if res.Waiting != 11 {
		t.Fatalf("rebuilt %d waiting, want 11", res.Waiting)
	}
	marks := e.sys.Store.Client().HGetAll(e.ctx, redisstore.OffsetsKey(e.ev)).Val()
	var covered int64
	for p, m := range marks {
		n, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			t.Fatalf("partition %s: mark %q", p, m)
		}
		covered += n + 1
	}
	if covered != res.Messages {
		t.Fatalf("marks %v cover %d messages, want the %d read", marks, covered, res.Messages)
	}
	// A consumer starting from the first offset: everything is folded in.
	cons := e.sys.StartConsumer(e.sys.ConsumerConfig())
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		s := cons.Stats()
		return s.Fetched == res.Messages && s.Lag == 0, fmt.Sprintf("consumer %+v, want %d fetched", s, res.Messages)
	})
	if s := cons.Stats(); s.Written != 0 {
		t.Fatalf("consumer wrote %d messages the rebuild had folded", s.Written)
	}
	e.sys.Leave(e.ev, user(1), 5000)
	e.waitLine(10)
}

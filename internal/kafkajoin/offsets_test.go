package kafkajoin_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// heldSink holds the first write it is given until release is closed, then
// makes it (whatever became of the caller's context, as a write already on
// its way would land) and calls after before the consumer goes on.
type heldSink struct {
	queue.IngestStore
	once          sync.Once
	held, release chan struct{}
	after         func()
}

func (h *heldSink) IngestLog(ctx context.Context, msgs []queue.LogMessage, nowMs int64) (queue.IngestResult, error) {
	first := false
	h.once.Do(func() { first = true })
	if !first {
		return h.IngestStore.IngestLog(ctx, msgs, nowMs)
	}
	close(h.held)
	<-h.release
	res, err := h.IngestStore.IngestLog(context.WithoutCancel(ctx), msgs, nowMs)
	h.after()
	return res, err
}

// TestLateWriteOfAnAppliedJoinQueuesNobody: a consumer's write of a join
// lands after another consumer applied that join and the user's leave
// after it (the stale member whose partition moved while it was stuck):
// the user stays out of the line.
func TestLateWriteOfAnAppliedJoinQueuesNobody(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{Brokers: 1})
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 10, 1)
	var lineAfter []testsys.WaitingUser
	sink := &heldSink{IngestStore: sys.Store, held: make(chan struct{}), release: make(chan struct{}), after: func() { lineAfter = sys.Waiting(ev) }}
	stale := sys.StartConsumerInto(sys.ConsumerConfig(), sink)
	sys.Join(ev, "gone", 100)
	select {
	case <-sink.held:
	case <-time.After(20 * time.Second):
		t.Fatal("the first consumer never wrote the join")
	}
	sys.Leave(ev, "gone", 200)

	// The partition's new reader applies the join and the leave.
	cfg := sys.ConsumerConfig()
	cfg.GroupID = "next-" + ev
	next := sys.StartConsumer(cfg)
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		s := next.Stats()
		return s.Written == 2 && s.Lag == 0, fmt.Sprintf("new reader: %+v", s)
	})
	close(sink.release)
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		s := stale.Stats()
		return s.Fetched == 2 && s.Lag == 0, fmt.Sprintf("stale reader: %+v", s)
	})
	if len(lineAfter) != 0 {
		t.Fatalf("line %v after the late write: the user who left is back", lineAfter)
	}
	if s := stale.Stats(); s.Written != 0 || s.Ignored != 2 {
		t.Fatalf("stale reader %+v, want both messages ignored", s)
	}
}

package gateway

import (
	"fmt"
	"testing"

	"github.com/waitq/waitq/internal/queue"
)

// A later admission can end before an earlier one's last (a join placed
// at the head meanwhile, then admitted): whether a user was admitted is
// decided by the furthest of all, whatever the order they are taken in.
func TestChangesKeepTheFurthestAdmitted(t *testing.T) {
	els := []queue.JournalElement{
		{Seq: 2, Popped: 3, LastPopped: queue.LineKey{Score: 10, User: "b"}},
		{Seq: 3, Popped: 1, LastPopped: queue.LineKey{Score: 5, User: "a"}},
	}
	d := newChanges(els)
	d.add(&els[1]) // newest first, as catchUp takes them
	d.add(&els[0])
	if d.popped != 4 || d.lastPopped != (queue.LineKey{Score: 10, User: "b"}) {
		t.Fatalf("popped %d, last %v; want 4 and {10 b}", d.popped, d.lastPopped)
	}
}

// A line that follows nobody (its gateway holds only holders, say) keeps
// no journal elements: each read's are dropped at once.
func TestNobodyFollowedKeepsNoElements(t *testing.T) {
	l := &line{users: map[string]*follow{}, at: map[int64]int{}, known: map[string]follow{}}
	l.advance(queue.LineReply{At: queue.JournalPos{Epoch: "e", Seq: 1}})
	for seq := int64(2); seq <= 100; seq++ {
		l.advance(queue.LineReply{At: queue.JournalPos{Epoch: "e", Seq: seq}, Elements: []queue.JournalElement{{Seq: seq, Joined: []queue.LineKey{{Score: 5, User: fmt.Sprint("u", seq)}}}}})
		l.catchUp(nil)
	}
	if len(l.elems) != 0 || l.base != 100 {
		t.Fatalf("%d elements kept from %d, want none from 100", len(l.elems), l.base)
	}
}

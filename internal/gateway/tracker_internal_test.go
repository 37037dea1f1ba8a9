package gateway

import "testing"

// A later admission can end before an earlier one's last (a join placed
// at the head meanwhile, then admitted): whether a user was admitted is
// decided by the furthest of all, whatever the order they are taken in.
func TestChangesKeepTheFurthestAdmitted(t *testing.T) {
	els := []element{
		{seq: 2, popped: 3, lastPopped: lineKey{10, "b"}},
		{seq: 3, popped: 1, lastPopped: lineKey{5, "a"}},
	}
	d := newChanges(els)
	d.add(&els[1]) // newest first, as catchUp takes them
	d.add(&els[0])
	if d.popped != 4 || d.lastPopped != (lineKey{10, "b"}) {
		t.Fatalf("popped %d, last %v; want 4 and {10 b}", d.popped, d.lastPopped)
	}
}

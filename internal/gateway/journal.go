package gateway

import (
	"slices"
	"sort"

	"github.com/waitq/waitq/internal/queue"
)

// The line's journal as a tracker reads it: its elements' changes counted
// for the users a catch-up brings forward (docs/data.md, "The line's
// journal"). The store reads the elements; the line's order is
// queue.LineKey's.

// changes are journal elements taken together (catchUp): the keys that
// joined, left and joined the pre-queue counted over keys, every key of
// the elements in order; the users that left or were let go; the users
// admitted and the furthest of them.
type changes struct {
	keys                  []queue.LineKey
	joined, leftKeys, pre fenwick
	left, detached        map[string]bool
	popped                int64
	lastPopped            queue.LineKey
}

func newChanges(els []queue.JournalElement) *changes {
	var keys []queue.LineKey
	for _, e := range els {
		keys = append(keys, e.Joined...)
		keys = append(keys, e.Left...)
		keys = append(keys, e.Pre...)
	}
	slices.SortFunc(keys, func(a, b queue.LineKey) int {
		if a.Less(b) {
			return -1
		}
		if b.Less(a) {
			return 1
		}
		return 0
	})
	keys = slices.Compact(keys)
	n := len(keys)
	return &changes{keys: keys, joined: make(fenwick, n+1), leftKeys: make(fenwick, n+1), pre: make(fenwick, n+1),
		left: map[string]bool{}, detached: map[string]bool{}}
}

// add takes e's changes in.
func (d *changes) add(e *queue.JournalElement) {
	for _, k := range e.Joined {
		d.joined.add(d.below(k))
	}
	for _, k := range e.Left {
		d.leftKeys.add(d.below(k))
		d.left[k.User] = true
	}
	for _, k := range e.Pre {
		d.pre.add(d.below(k))
	}
	for _, u := range e.Detached {
		d.detached[u] = true
	}
	if e.Popped > 0 {
		d.popped += e.Popped
		if d.lastPopped.Less(e.LastPopped) || d.popped == e.Popped {
			d.lastPopped = e.LastPopped
		}
	}
}

// below is how many of d.keys are before k: k's index when it is one of
// them.
func (d *changes) below(k queue.LineKey) int {
	return sort.Search(len(d.keys), func(i int) bool { return !d.keys[i].Less(k) })
}

// fenwick counts keys by their index in a changes' keys: add one at i,
// sum those before n.
type fenwick []int64

func (t fenwick) add(i int) {
	for i++; i < len(t); i += i & -i {
		t[i]++
	}
}

func (t fenwick) sum(n int) int64 {
	var s int64
	for ; n > 0; n -= n & -n {
		s += t[n]
	}
	return s
}

package gateway

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The line's journal as a Tracker reads it: its elements parsed
// (journal_lib.lua writes them, docs/data.md "The line's journal") and
// their changes counted for the users a catch-up brings forward.

// lineKey orders the line as Redis does: by score, then by user id's bytes.
type lineKey struct {
	score float64
	user  string
}

func (a lineKey) less(b lineKey) bool {
	return a.score < b.score || a.score == b.score && a.user < b.user
}

// element is one journal element, parsed (journal_lib.lua).
type element struct {
	seq               int64
	joined, left, pre []lineKey
	popped            int64
	lastPopped        lineKey
	detached          []string
}

// changes are journal elements taken together (catchUp): the keys that
// joined, left and joined the pre-queue counted over keys, every key of
// the elements in order; the users that left or were let go; the users
// admitted and the furthest of them.
type changes struct {
	keys                  []lineKey
	joined, leftKeys, pre fenwick
	left, detached        map[string]bool
	popped                int64
	lastPopped            lineKey
}

func newChanges(els []element) *changes {
	var keys []lineKey
	for _, e := range els {
		keys = append(keys, e.joined...)
		keys = append(keys, e.left...)
		keys = append(keys, e.pre...)
	}
	slices.SortFunc(keys, func(a, b lineKey) int {
		if a.less(b) {
			return -1
		}
		if b.less(a) {
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
func (d *changes) add(e *element) {
	for _, k := range e.joined {
		d.joined.add(d.below(k))
	}
	for _, k := range e.left {
		d.leftKeys.add(d.below(k))
		d.left[k.user] = true
	}
	for _, k := range e.pre {
		d.pre.add(d.below(k))
	}
	for _, u := range e.detached {
		d.detached[u] = true
	}
	if e.popped > 0 {
		d.popped += e.popped
		if d.lastPopped.less(e.lastPopped) || d.popped == e.popped {
			d.lastPopped = e.lastPopped
		}
	}
}

// below is how many of d.keys are before k: k's index when it is one of
// them.
func (d *changes) below(k lineKey) int {
	return sort.Search(len(d.keys), func(i int) bool { return !d.keys[i].less(k) })
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

// parseElement parses one journal element (journal_lib.lua).
func parseElement(s string) (element, bool) {
	lines := strings.Split(s, "\n")
	_, seq, ok := strings.Cut(lines[0], " ")
	if !ok {
		return element{}, false
	}
	var e element
	var err error
	if e.seq, err = strconv.ParseInt(seq, 10, 64); err != nil {
		return element{}, false
	}
	for _, c := range lines[1:] {
		if c == "" {
			continue
		}
		op, rest := c[0], c[1:]
		if op == 'x' {
			e.detached = append(e.detached, strings.TrimPrefix(rest, " "))
			continue
		}
		if op == 'p' {
			n, r, _ := strings.Cut(rest, " ")
			if e.popped, err = strconv.ParseInt(n, 10, 64); err != nil {
				return element{}, false
			}
			rest = r
		}
		sc, user, ok := strings.Cut(rest, " ")
		score, err := strconv.ParseFloat(sc, 64)
		if !ok || err != nil {
			return element{}, false
		}
		k := lineKey{score, user}
		switch op {
		case '+':
			e.joined = append(e.joined, k)
		case '-':
			e.left = append(e.left, k)
		case 'd':
			e.pre = append(e.pre, k)
		case 'p':
			e.lastPopped = k
		}
	}
	return e, true
}

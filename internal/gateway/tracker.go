package gateway

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/waitq/waitq/internal/queue"
)

// A tracker reads statuses for a gateway's status rounds (statusReader)
// and keeps the places of the users it holds sockets of: each waiting user
// is read from Redis once, when first asked about (status.lua, which also
// takes their presence for the gateway), and after that their place comes
// from the line's journal, read once per event and slice: what changed in
// the line other than a join behind everyone (docs/data.md, "The line's
// journal"). A round then costs Redis one read per event and slice, not
// one per user. The places are exact: every change ahead of a user is in
// the journal, and a user whose own place changed (admitted, left, swept)
// or whose presence another gateway let go is read again.
type tracker struct {
	store queue.LineStore
	id    uint64 // this gateway's id, for the presence it holds

	mu    sync.Mutex
	lines map[string]*line // by event
	// relearn is the most users known before (followed until the journal
	// started again, or due to be read again) one Status call reads again:
	// after a rebuild a gateway re-reads its users over several rounds,
	// not all at once; meanwhile each is told their last place.
	relearn int

	detachMu sync.Mutex
	detach   map[string]map[string]bool // event -> users whose presence to let go

	reads, resets atomic.Int64 // users read from Redis; journals started again (for metrics)
}

// PlacesRead is how many users' places were read from Redis (status.lua):
// at connect, when the journal moved their own place, after a new
// journal, at the periodic re-read.
func (t *tracker) PlacesRead() int64 { return t.reads.Load() }

// Resets is how many times a line's journal started again (a new epoch, or
// a point no longer in it) and every place was to be read again.
func (t *tracker) Resets() int64 { return t.resets.Load() }

// newTracker returns a tracker reading through store, under a fresh
// gateway id.
func newTracker(store queue.LineStore) *tracker {
	return &tracker{store: store, id: 1 + rand.Uint64N(queue.GatewayIDLimit-1), relearn: defaultRelearn,
		lines: map[string]*line{}, detach: map[string]map[string]bool{}}
}

// line is what a tracker keeps of one event.
type line struct {
	mu    sync.Mutex
	pos   queue.JournalPos // the journal read up to
	base  int64            // elements holds the elements after base, up to pos.Seq
	elems []queue.JournalElement
	users map[string]*follow // the waiting users followed
	at    map[int64]int      // followed users by the seq they are brought to
	// known are users to read again (the journal started again, or their
	// re-read is due): their last place, told until they are read.
	known map[string]follow
	head  queue.Head
	ends  []int64
}

// follow is a followed user: their key in the line, their rank and drawn
// place (-1: none) as of seq, and when to read them again anyway.
type follow struct {
	key         queue.LineKey
	rank, drawn int64
	seq         int64
	readAgainMs int64
}

// defaultRelearn is tracker.relearn: 20,000 users, about 0.12 s of Redis
// CPU.
const defaultRelearn = 20_000

// The followed users are read again from Redis between rereadMs and
// rereadMs + rereadJitterMs after they were read, whatever the journal
// says: a safety net against what it cannot see (a failover to a replica
// that lost its last writes), at about 1/120 of a read per round.
const (
	rereadMs       = 10 * 60 * 1000
	rereadJitterMs = 5 * 60 * 1000
)

// Status reads where users of eventID stand (statusReader): the followed
// ones from the journal, the others from Redis, in one round trip (two when
// the journal took some followed users out of the line).
func (t *tracker) Status(ctx context.Context, eventID string, users []string, nowMs int64) (queue.StatusBatch, error) {
	l := t.line(eventID)
	l.mu.Lock()
	defer l.mu.Unlock()
	var learn, before []string
	for _, u := range users {
		if f := l.users[u]; f != nil && nowMs >= f.readAgainMs {
			l.known[u] = *f
			l.unfollow(u)
		}
		if l.users[u] == nil {
			if _, ok := l.known[u]; ok {
				before = append(before, u)
			} else {
				learn = append(learn, u)
			}
		}
	}
	learn = append(learn, before[:min(len(before), max(t.relearn-len(learn), 0))]...)
	raw := map[string]queue.RawPlace{}
	if err := t.read(ctx, eventID, l, learn, nowMs, raw); err != nil {
		return queue.StatusBatch{}, err
	}
	lost := l.catchUp(users)
	again := make(map[string]bool, len(lost))
	for _, u := range lost {
		again[u] = true
	}
	for _, u := range users {
		_, known := l.known[u]
		if _, ok := raw[u]; !ok && l.users[u] == nil && !again[u] && !known {
			lost = append(lost, u)
		}
	}
	if len(lost) > 0 {
		if err := t.read(ctx, eventID, l, lost, nowMs, raw); err != nil {
			return queue.StatusBatch{}, err
		}
		l.catchUp(lost) // those moved again since are told as read, and read again next time
	}
	b := l.head.Batch(len(users))
	for _, u := range users {
		r, ok := raw[u]
		f := l.users[u]
		if f == nil && !ok {
			if k, known := l.known[u]; known {
				f = &k // not read again yet: their last place
			}
		}
		if f != nil {
			r = queue.RawPlace{Rank: f.rank, StayUntil: valueNone, Drawn: f.drawn, SlotAt: slotAt(l.head, l.ends, f.rank)}
		} else if !ok {
			r = queue.RawPlace{Rank: valueNone, StayUntil: valueNone, Drawn: valueNone}
		}
		b.Places = append(b.Places, l.head.Told(r, nowMs))
		b.SlotAt = append(b.SlotAt, l.head.SlotTold(r, nowMs))
	}
	return b, nil
}

// valueNone is a field's "none" (queue.Place's -1).
const valueNone = -1

// read learns the places of users (into raw; the waiting ones followed)
// and the journal since l.pos, in one round trip.
func (t *tracker) read(ctx context.Context, eventID string, l *line, users []string, nowMs int64, raw map[string]queue.RawPlace) error {
	t.keep(eventID, users)
	r, err := t.store.Line(ctx, eventID, queue.LineRequest{Sync: users, Since: l.pos, NowMs: nowMs, Gateway: t.id})
	if err != nil {
		return err
	}
	t.reads.Add(int64(len(users)))
	if l.advance(r) {
		t.resets.Add(1)
	}
	for i, u := range users {
		p := r.Synced[i]
		raw[u] = p
		delete(l.known, u)
		l.unfollow(u)
		// Followed: waiting with no stay, read at a point the elements
		// kept reach back to.
		if p.Rank >= 0 && p.StayUntil < 0 && !p.Unrecorded && p.At.Epoch == l.pos.Epoch && p.At.Seq >= l.base && p.At.Seq <= l.pos.Seq {
			again := nowMs + rereadMs + rand.Int64N(rereadJitterMs)
			l.followAt(u, &follow{key: queue.LineKey{Score: p.Score, User: u}, rank: p.Rank, drawn: p.Drawn, seq: p.At.Seq, readAgainMs: again})
		}
	}
	return nil
}

func (t *tracker) line(eventID string) *line {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.lines[eventID]
	if l == nil {
		l = &line{users: map[string]*follow{}, at: map[int64]int{}, known: map[string]follow{}}
		t.lines[eventID] = l
	}
	return l
}

// advance takes in a read's head, ends and journal elements, and reports
// whether the journal started again (every followed user to read again).
func (l *line) advance(r queue.LineReply) bool {
	l.head, l.ends = r.Head, r.Ends
	reset := r.Reset || r.At.Epoch != l.pos.Epoch
	for i, e := range r.Elements {
		if e.Seq != l.pos.Seq+int64(i)+1 {
			reset = true // not the journal's order: learn every place again
			break
		}
	}
	if !reset && l.pos.Seq+int64(len(r.Elements)) != r.At.Seq {
		reset = true
	}
	if reset {
		for u, f := range l.users {
			l.known[u] = *f
			l.unfollow(u)
		}
		known := l.pos.Epoch != ""
		l.elems, l.base, l.pos = nil, r.At.Seq, r.At
		return known
	}
	l.elems = append(l.elems, r.Elements...)
	l.pos = r.At
	return false
}

// catchUp brings the followed ones of users to l.pos and returns those the
// journal took out of the line or whose presence another gateway let go:
// no longer followed, to read again.
func (l *line) catchUp(users []string) []string {
	groups := map[int64][]string{}
	for _, u := range users {
		if f := l.users[u]; f != nil && f.seq < l.pos.Seq {
			groups[f.seq] = append(groups[f.seq], u)
		}
	}
	if len(groups) == 0 {
		l.trim() // nobody behind: the elements read go at once
		return nil
	}
	// One pass over the elements, newest first, for every group at once:
	// the group at seq s takes the changes of the elements after s. The
	// keys moved are counted in Fenwick trees over all of them, sorted
	// once, so many groups (users read first at many points) cost one
	// sort, not one each.
	seqs := slices.Sorted(maps.Keys(groups))
	els := l.elems[seqs[0]-l.base:]
	d := newChanges(els)
	var lost []string
	next := len(els)
	for i := len(seqs) - 1; i >= 0; i-- {
		for next > 0 && els[next-1].Seq > seqs[i] {
			next--
			d.add(&els[next])
		}
		for _, u := range groups[seqs[i]] {
			f := l.users[u]
			if d.detached[u] || d.left[u] || d.popped > 0 && !d.lastPopped.Less(f.key) {
				lost = append(lost, u)
				l.unfollow(u)
				continue
			}
			at := d.below(f.key)
			f.rank += d.joined.sum(at) - d.leftKeys.sum(at) - d.popped
			if f.drawn >= 0 {
				f.drawn += d.pre.sum(at)
			}
			l.move(f, l.pos.Seq)
		}
	}
	l.trim()
	return lost
}

func (l *line) followAt(u string, f *follow) {
	l.users[u] = f
	l.at[f.seq]++
}

func (l *line) unfollow(u string) {
	if f := l.users[u]; f != nil {
		l.drop(f.seq)
		delete(l.users, u)
	}
}

func (l *line) move(f *follow, seq int64) {
	l.drop(f.seq)
	f.seq = seq
	l.at[seq]++
}

func (l *line) drop(seq int64) {
	if l.at[seq]--; l.at[seq] <= 0 {
		delete(l.at, seq)
	}
}

// trim forgets the elements every followed user is past.
func (l *line) trim() {
	low := l.pos.Seq
	for seq := range l.at {
		low = min(low, seq)
	}
	if low > l.base {
		l.elems = l.elems[low-l.base:]
		l.base = low
	}
}

// slotAt is status.lua's slot_at for a followed user at rank, from the
// ends of the stays running: when a slot frees for them if every holder
// keeps theirs to the end (0: one is free).
func slotAt(h queue.Head, ends []int64, rank int64) int64 {
	holders := int64(len(ends))
	k := rank + 1 - (h.Capacity - holders)
	if h.Capacity <= 0 || holders <= 0 || k < 1 {
		return 0
	}
	return ends[(k-1)%holders] + (k-1)/holders*h.HoldMs
}

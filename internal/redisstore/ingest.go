package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/draw"
)

// Ingest applies msgs, which have no place in the log (queue.NoOffset), as
// IngestLog does.
func (s *Store) Ingest(ctx context.Context, msgs []queue.Message, nowMs int64) (queue.IngestResult, error) {
	return s.IngestLog(ctx, queue.NoOffsets(msgs), nowMs)
}

// IngestLog applies msgs to the waiting lines, in order per event, with one
// script call per event, all in one pipelined round trip; with the fast
// track on (Options.FastTrack) each call then admits from the head of the line
// while there is room, telling the users (IngestStep: recorded first,
// by the caller). A message at or below the highest offset
// applied on its partition (OffsetsKey) is skipped and counted as ignored,
// and the marks are raised in the step that applies the batch. Records
// (queue.Op.Record) are skipped and counted as ignored: Redis made those
// changes already; they only raise the marks. The messages of an event
// being rebuilt are not written: it is listed in Rebuilding. A drop's
// pre-queue joins take their drawn places (package draw), computed here
// from the event's seed. On error nothing can be assumed written; applying
// the same messages again is harmless.
func (s *Store) IngestLog(ctx context.Context, msgs []queue.LogMessage, nowMs int64) (queue.IngestResult, error) {
	res, _, err := s.ingest(ctx, msgs, nowMs, false)
	return res, err
}

// IngestStep is IngestLog for a caller that records the fast track's
// admissions (package recording): they stay unrecorded, told to nobody,
// until MarkRecorded.
func (s *Store) IngestStep(ctx context.Context, msgs []queue.LogMessage, nowMs int64) (queue.IngestResult, []queue.Changes, error) {
	res, cs, err := s.ingest(ctx, msgs, nowMs, true)
	if err != nil {
		return res, nil, err
	}
	return res, steps(cs, nowMs), nil
}

func (s *Store) ingest(ctx context.Context, msgs []queue.LogMessage, nowMs int64, recorded bool) (queue.IngestResult, []changes, error) {
	var (
		order []string
		byEv  = map[string][]*queue.LogMessage{}
		live  = map[string]bool{} // events with a join or a leave in msgs
		res   queue.IngestResult
	)
	for i := range msgs {
		m := &msgs[i]
		if m.Op.Record() {
			res.Ignored++ // a change already made: only a rebuild reads it
			if m.Offset < 0 {
				continue
			}
		} else {
			live[m.EventID] = true
		}
		if _, ok := byEv[m.EventID]; !ok {
			order = append(order, m.EventID)
		}
		byEv[m.EventID] = append(byEv[m.EventID], m)
	}
	// A call refused because the draw changed (the event was deleted and
	// made again, or scheduled since the seed was cached) is sent again
	// with the seed read afresh; twice is enough for any one change.
	var cs []changes
	for attempt := 0; len(order) > 0; attempt++ {
		if attempt == 3 {
			return res, nil, fmt.Errorf("redisstore: ingest: the draw of %v kept changing", order)
		}
		stale, err := s.ingestEvents(ctx, order, byEv, live, nowMs, recorded, &res, &cs)
		if err != nil {
			return res, nil, fmt.Errorf("redisstore: ingest %d messages: %w", len(msgs), err)
		}
		order = stale
	}
	return res, cs, nil
}

// ingestEvents runs the ingest script once per event of order, adding what
// it did to res, and returns the events whose draw was stale (nothing of
// theirs was written). An event of order not in live sent records only: it
// is listed neither as unknown nor as being rebuilt (its records were
// never to be written).
func (s *Store) ingestEvents(ctx context.Context, order []string, byEv map[string][]*queue.LogMessage, live map[string]bool, nowMs int64, recorded bool, res *queue.IngestResult, cs *[]changes) ([]string, error) {
	draws, err := s.draws.get(ctx, s, order)
	if err != nil {
		return nil, err
	}
	calls := make([]scriptCall, len(order))
	skipped := make([]int, len(order))
	for i, ev := range order {
		d := draws[ev]
		var drawer *draw.Drawer
		if d.seed != nil {
			drawer = draw.NewDrawer(*d.seed)
		}
		var args []any
		args, skipped[i] = ingestArgs(byEv[ev], drawer, s.lasts.get(ev), nowMs, s.fastTrack, ev, AdmissionsChannel, d.commitment, recordArg(recorded))
		k := keysOf(ev)
		calls[i] = scriptCall{ingestScript, append(k.admission(), k.prequeue, k.offsets, k.joinKeys), args}
	}
	cmds, err := s.pipeline(ctx, calls)
	if err != nil {
		return nil, err
	}
	var stale []string
	for i, cmd := range cmds {
		switch v := cmd.Val().(type) {
		case int64:
			switch {
			case !live[order[i]] && (v == codeNoEvent || v == codeRebuilding):
				continue
			case v == codeNoEvent:
				res.UnknownEvents = append(res.UnknownEvents, order[i])
				continue
			case v == codeStaleDraw:
				s.draws.forget(order[i])
				stale = append(stale, order[i])
				continue
			case v == codeRebuilding:
				res.Rebuilding = append(res.Rebuilding, order[i])
				continue
			}
		case []any:
			r, err := decodeIngestReply(v)
			if err != nil {
				return nil, fmt.Errorf("event %s: %w", order[i], err)
			}
			s.lasts.set(order[i], r.last)
			res.Joined += r.joined
			res.Left += r.left
			res.Ignored += r.ignored + skipped[i]
			res.Admitted += r.admitted
			res.Inversions += r.inversions
			res.HoldsExpired += r.holdsExpired
			*cs = append(*cs, r.admit.changes(order[i]))
			continue
		}
		return nil, fmt.Errorf("event %s: unexpected reply %v", order[i], cmd.Val())
	}
	return stale, nil
}

// ingestReply is ingest.lua's reply to one event's batch.
type ingestReply struct {
	joined, left, ignored, admitted, inversions int
	admit                                       admitReply
	holdsExpired                                int      // item holds ended with the expired holders
	last                                        lineLast // the line's last as the script left it
}

// decodeIngestReply reads ingest.lua's list reply (its header's "Returns":
// {joined, left, ignored, admitted, inversions, expiresAt, admittedUsers,
// expired, ended, last}).
func decodeIngestReply(v []any) (ingestReply, error) {
	var r ingestReply
	if len(v) != 10 {
		return r, fmt.Errorf("unexpected ingest reply %v", v)
	}
	var n [5]int64
	for i := range n {
		var ok bool
		if n[i], ok = v[i].(int64); !ok {
			return r, fmt.Errorf("unexpected ingest reply %v", v)
		}
	}
	ended, ok := v[8].(int64)
	if !ok {
		return r, fmt.Errorf("unexpected ingest reply %v", v)
	}
	admit, err := decodeAdmit(v[5], v[6], v[7])
	if err != nil {
		return r, err
	}
	r.joined, r.left, r.ignored, r.admitted, r.inversions = int(n[0]), int(n[1]), int(n[2]), int(n[3]), int(n[4])
	r.admit, r.holdsExpired = admit, int(ended)
	r.last.score, r.last.known = v[9].(int64)
	return r, nil
}

// ingestArgs returns ingest.lua's arguments for one event's messages,
// after nowMs and head (ARGV[1], ARGV[2..6]), and how many messages it
// skipped as applied: a message at or below an earlier offset of its
// partition in msgs (a redelivery in the same batch). The records only raise their partitions'
// marks; the joins and leaves are listed in columns, one argument per
// field the common join needs (the partition and offset of each are in
// one string that ingest.lua reads only for a redelivery). A plain batch
// carries its journal notes unless last (the line's last score as last
// seen, lineLasts) says every join of it goes behind the line.
func ingestArgs(msgs []*queue.LogMessage, drawer *draw.Drawer, last lineLast, nowMs int64, head ...any) ([]any, int) {
	b := newIngestBatch(msgs)
	listed := b.listed
	n := len(listed)
	once, plain := b.shape()
	where, buckets, histogram := ingestPositions(listed, nowMs)
	cols, columns := 2, ""
	if slices.ContainsFunc(listed, func(e ingestEntry) bool { return e.m.JoinKey != "" }) {
		cols, columns = cols+1, "v"
	}
	if drawer != nil {
		cols, columns = cols+1, columns+"d"
	}
	args := make([]any, 0, 1+len(head)+7+3*len(b.order)+cols*n+1)
	args = append(args, nowMs)
	args = append(args, head...)
	args = append(args, n, columns, once, plain, histogram, buckets, len(b.order))
	for _, part := range b.order {
		p := b.parts[part]
		low := ""
		if p.low >= 0 {
			low = strconv.FormatInt(p.low, 10)
		}
		args = append(args, part, low, p.high)
	}
	args = append(args, where)
	args = ingestColumns(args, listed, columns, drawer)
	if plain != "" {
		args = append(args, ingestNotes(listed, last))
	}
	return args, b.skipped
}

// ingestPartition is one partition's run in an ingest batch: its triple's
// place in ingest.lua's arguments, the lowest offset of a join or leave
// listed (-1: none) and the highest offset applied (-1: none).
type ingestPartition struct {
	slot      int
	low, high int64
}

// ingestEntry is a join or a leave ingest.lua lists.
type ingestEntry struct {
	m    *queue.LogMessage
	slot int // its partition's triple (1..), 0: not from the log
}

// ingestBatch is one event's messages sorted for ingest.lua: the
// partitions in the order first met, the joins and leaves to apply, and
// how many were skipped as redelivered within the batch.
type ingestBatch struct {
	parts   map[int]*ingestPartition
	order   []int
	listed  []ingestEntry
	skipped int
}

// newIngestBatch sorts msgs: a message at or below an earlier offset of
// its partition is skipped (counted unless a record); a record only raises
// its partition's mark; the rest are listed in their order.
func newIngestBatch(msgs []*queue.LogMessage) ingestBatch {
	b := ingestBatch{parts: map[int]*ingestPartition{}, listed: make([]ingestEntry, 0, len(msgs))}
	for _, m := range msgs {
		slot := 0
		if m.Offset >= 0 {
			p := b.parts[m.Partition]
			if p == nil {
				p = &ingestPartition{slot: len(b.order) + 1, low: -1, high: -1}
				b.parts[m.Partition] = p
				b.order = append(b.order, m.Partition)
			}
			if m.Offset <= p.high {
				if !m.Op.Record() {
					b.skipped++
				}
				continue
			}
			p.high = m.Offset
			if m.Op.Record() {
				continue
			}
			if p.low < 0 {
				p.low = m.Offset
			}
			slot = p.slot
		} else if m.Op.Record() {
			continue
		}
		b.listed = append(b.listed, ingestEntry{m, slot})
	}
	return b
}

// shape tells ingest.lua's flags for the batch ("1" or ""): once, every
// user listed once; plain, once and joins only. Joins of users listed
// once are independent of one another: applied in stamp order (a batch
// holds the partitions' runs one after another), each goes behind the
// last, and the batch is plain; a plain batch is sorted so.
func (b *ingestBatch) shape() (once, plain string) {
	once, plain = "1", "1"
	seen := make(map[string]struct{}, len(b.listed))
	for _, e := range b.listed {
		if _, ok := seen[e.m.UserID]; ok {
			once, plain = "", ""
		}
		seen[e.m.UserID] = struct{}{}
		if e.m.Op != queue.OpJoin {
			plain = ""
		}
	}
	if plain != "" {
		slices.SortStableFunc(b.listed, func(x, y ingestEntry) int {
			return cmp.Or(cmp.Compare(x.m.TS, y.m.TS), strings.Compare(x.m.UserID, y.m.UserID))
		})
	}
	return once, plain
}

// ingestPositions returns, for listed: where each came from ("slot
// offset " per entry), its delay bucket as one letter ('A'+bucket) and the
// joins' delay histogram ("bucket count " per bucket used).
func ingestPositions(listed []ingestEntry, nowMs int64) (where, buckets, histogram []byte) {
	var hist [queue.DelayBuckets]int
	buckets = make([]byte, len(listed))
	for i, e := range listed {
		m := e.m
		where = strconv.AppendInt(where, int64(e.slot), 10)
		where = append(where, ' ')
		where = strconv.AppendInt(where, max(m.Offset, queue.NoOffset), 10)
		where = append(where, ' ')
		b := queue.DelayBucket(nowMs - m.TS)
		buckets[i] = 'A' + byte(b)
		if m.Op == queue.OpJoin {
			hist[b]++
		}
	}
	for b, count := range hist {
		if count > 0 {
			histogram = fmt.Appendf(histogram, "%d %d ", b, count)
		}
	}
	return where, buckets, histogram
}

// ingestColumns appends listed's columns to args: the users, the stamps
// ("-" for a leave), the join keys when columns has "v", the drawn scores
// ("" for a leave) when it has "d".
func ingestColumns(args []any, listed []ingestEntry, columns string, drawer *draw.Drawer) []any {
	for _, e := range listed {
		args = append(args, e.m.UserID)
	}
	for _, e := range listed {
		if e.m.Op == queue.OpJoin {
			args = append(args, e.m.TS)
		} else {
			args = append(args, "-") // a leave
		}
	}
	if strings.Contains(columns, "v") {
		for _, e := range listed {
			args = append(args, JoinKeyDigest(e.m.JoinKey))
		}
	}
	if drawer != nil {
		for _, e := range listed {
			score := ""
			if e.m.Op == queue.OpJoin {
				score = strconv.FormatInt(drawer.Score(e.m.UserID), 10)
			}
			args = append(args, score)
		}
	}
	return args
}

// ingestNotes is a plain batch's journal notes of its joins, one line each
// ("+stamp user"), for those ingest.lua finds placed before the line's
// last; none (ingest.lua writes them) when the batch looks to go behind
// everyone.
func ingestNotes(listed []ingestEntry, last lineLast) []byte {
	var notes []byte
	if len(listed) == 0 || !last.known || listed[0].m.TS <= last.score {
		for _, e := range listed {
			notes = append(notes, '+')
			notes = strconv.AppendInt(notes, e.m.TS, 10)
			notes = append(notes, ' ')
			notes = append(notes, e.m.UserID...)
			notes = append(notes, '\n')
		}
	}
	return notes
}

package recording

import (
	"context"
	"slices"
	"sync"

	"github.com/waitq/waitq/internal/queue"
)

// maxPending bounds the sweep and expiry records a Store keeps for
// another try while the log cannot be written (pendingRecords).
const maxPending = 100_000

// pendingRecords are the sweep, expiry, call, lapse and move records whose
// write failed.
// Nothing in Redis keeps them, unlike an admission (it stays unrecorded)
// or a release (its slot stays freeing), which a monitor tick finds and
// records again: they are written with the Store's next records. Such a
// record names the place or hold it ended (queue.Replay), so writing it
// late, after the user's later messages, changes nothing else. Past
// maxPending the oldest are discarded, counted.
type pendingRecords struct {
	mu        sync.Mutex
	recs      []queue.Message
	discarded int64
}

// take returns the records kept, keeping none.
func (p *pendingRecords) take() []queue.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	recs := p.recs
	p.recs = nil
	return recs
}

// keep keeps the sweep and expiry records of recs for another try and
// returns how many are kept in all and how many were discarded so far.
func (p *pendingRecords) keep(recs []queue.Message) (int, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range recs {
		switch m.Op {
		case queue.OpSweep, queue.OpExpire, queue.OpCall, queue.OpLapse, queue.OpMoved, queue.OpMovedIn:
			p.recs = append(p.recs, m)
		}
	}
	if over := len(p.recs) - maxPending; over > 0 {
		p.recs = slices.Delete(p.recs, 0, over)
		p.discarded += int64(over)
	}
	return len(p.recs), p.discarded
}

// record writes the records of cs to the log, the kept ones first, then
// marks their admissions recorded, which tells their users, and frees the
// released slots whose release records they hold (the store's
// MarkRecorded). It returns, by event, the users whose admission is
// recorded now, and the events whose released slots are free now. A
// failure is logged: the admissions stay unrecorded, and the slots
// counted, until a monitor tick records them; the sweeps and expiries are
// kept (pendingRecords) and written with the next records.
func (s *Store) record(ctx context.Context, nowMs int64, cs []queue.Changes) (map[string][]string, map[string]bool) {
	recorded := map[string][]string{}
	freed := map[string][]string{}
	var recs []queue.Message
	for _, c := range cs {
		recorded[c.EventID] = append(recorded[c.EventID], c.Admitted...)
		freed[c.EventID] = append(freed[c.EventID], c.Freeing...)
		recs = append(recs, c.Records...)
	}
	recs = append(s.pending.take(), recs...)
	if len(recs) == 0 {
		return recorded, nil
	}
	if err := s.log.Record(ctx, recs); err != nil {
		kept, discarded := s.pending.keep(recs)
		s.logger.Warn("writing records to the log failed; admissions and released slots wait for a monitor tick to record them, sweeps and expiries for the next records",
			"records", len(recs), "kept", kept, "discarded", discarded, "err", err)
		return nil, nil
	}
	var marks []queue.Marks
	for _, c := range cs {
		if slices.ContainsFunc(marks, func(m queue.Marks) bool { return m.EventID == c.EventID }) {
			continue
		}
		users, members := recorded[c.EventID], freed[c.EventID]
		if len(users) == 0 && len(members) == 0 {
			continue
		}
		marks = append(marks, queue.Marks{EventID: c.EventID, Users: users, Freeing: members})
	}
	if len(marks) == 0 {
		return recorded, nil
	}
	rebuilding, err := s.Live.MarkRecorded(ctx, marks)
	if err != nil {
		s.logger.Warn("marking recorded admissions failed; a monitor tick records them again", "err", err)
		return nil, nil
	}
	free := map[string]bool{}
	for _, m := range marks {
		if slices.Contains(rebuilding, m.EventID) {
			// Nobody told, no slot freed: they stay unrecorded (and
			// counted) through the rebuild.
			delete(recorded, m.EventID)
			continue
		}
		free[m.EventID] = len(freed[m.EventID]) > 0
	}
	return recorded, free
}

package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waitq/waitq/internal/queue"
)

// RecordGrace is how long an admission may stay unrecorded before a
// monitor tick records it itself: its admitter is taken for dead, or its
// write failed (a broker down, a topic not yet in its metadata). An
// admitter still writing meanwhile only means the record is written twice,
// which a rebuild reads as one admission; the grace is how long a user may
// wait for the admission they were given.
const RecordGrace = 2 * time.Second

// maxPendingRecords bounds the sweep and expiry records a Store keeps
// for another try while the log cannot be written (pendingRecords).
const maxPendingRecords = 100_000

// pendingRecords are the sweep and expiry records whose write failed.
// Nothing in Redis keeps them, unlike an admission (it stays unrecorded)
// or a release (its slot stays freeing), which a monitor tick finds and
// records again: they are written with the Store's next records. Such a
// record names the place or hold it ended (queue.Replay), so writing it
// late, after the user's later messages, changes nothing else. Past
// maxPendingRecords the oldest are dropped, counted.
type pendingRecords struct {
	mu      sync.Mutex
	recs    []queue.Message
	dropped int64
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
// returns how many are kept in all and how many were dropped so far.
func (p *pendingRecords) keep(recs []queue.Message) (int, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range recs {
		if m.Op == queue.OpSweep || m.Op == queue.OpExpire {
			p.recs = append(p.recs, m)
		}
	}
	if over := len(p.recs) - maxPendingRecords; over > 0 {
		p.recs = slices.Delete(p.recs, 0, over)
		p.dropped += int64(over)
	}
	return len(p.recs), p.dropped
}

// recordArg is the scripts' record argument: '1' when the caller records
// admissions before anyone is told of them.
func (s *Store) recordArg() string {
	if s.recorder == nil {
		return "0"
	}
	return "1"
}

// admittedUser is one admission a script made or found unrecorded: what
// its admit record holds.
type admittedUser struct {
	user          string
	score, served int64 // the place left, the join stamp served
	expires       int64 // the end of the hold
}

// changes is what the scripts changed in one event, to be recorded.
type changes struct {
	event    string
	admitted []admittedUser
	ended    []string        // holds that ended
	other    []queue.Message // releases, sweeps
	fresh    []string        // admitted in this call (not recovered)
	freed    []string        // freeing members whose release records are in other
}

// freeingRelease returns the release record of a freeing member,
// "<released at>|<served mark>|<user>" (release.lua): it names the
// admission it ends by its served mark (queue.Replay ignores it for a later
// admission of the same user).
func freeingRelease(event, member string, nowMs int64) (queue.Message, error) {
	_, rest, ok1 := strings.Cut(member, "|")
	served, user, ok2 := strings.Cut(rest, "|")
	mark, err := strconv.ParseInt(served, 10, 64)
	if !ok1 || !ok2 || err != nil || user == "" {
		return queue.Message{}, fmt.Errorf("bad freeing member %q", member)
	}
	m := queue.NewRecord(queue.OpRelease, event, user, nowMs)
	m.JoinTS = mark
	return m, nil
}

// records returns the records of c made at nowMs appended to out.
func (c changes) records(nowMs int64, out []queue.Message) []queue.Message {
	for _, a := range c.admitted {
		m := queue.NewRecord(queue.OpAdmit, c.event, a.user, nowMs)
		m.ExpiresAt, m.Score, m.JoinTS = a.expires, a.score, a.served
		out = append(out, m)
	}
	for _, u := range c.ended {
		out = append(out, queue.NewRecord(queue.OpExpire, c.event, u, nowMs))
	}
	return append(out, c.other...)
}

// record writes the records of cs to the log, then marks their admissions
// recorded, which tells their users, and frees the released slots whose
// release records they hold (mark_recorded.lua). It returns, by event, the
// users whose admission is recorded now, and the events whose released
// slots are free now. Without a recorder the scripts told the users
// themselves and every admission is returned. A failure is logged: the
// admissions stay unrecorded, and the slots counted, until a monitor tick
// records them; the sweeps and expiries are kept (pendingRecords) and
// written with the next records, which a later call writes first.
func (s *Store) record(ctx context.Context, nowMs int64, cs []changes) (map[string][]string, map[string]bool) {
	recorded := map[string][]string{}
	freed := map[string][]string{}
	var recs []queue.Message
	for _, c := range cs {
		for _, a := range c.admitted {
			recorded[c.event] = append(recorded[c.event], a.user)
		}
		freed[c.event] = append(freed[c.event], c.freed...)
		if s.recorder != nil {
			recs = c.records(nowMs, recs)
		}
	}
	if s.recorder == nil {
		return recorded, nil
	}
	recs = append(s.pending.take(), recs...)
	if len(recs) == 0 {
		return recorded, nil
	}
	if err := s.recorder.Record(ctx, recs); err != nil {
		kept, dropped := s.pending.keep(recs)
		s.log.Warn("writing records to the log failed; admissions and released slots wait for a monitor tick to record them, sweeps and expiries for the next records",
			"records", len(recs), "kept", kept, "dropped", dropped, "err", err)
		return nil, nil
	}
	var calls []scriptCall
	var events []string
	for _, c := range cs {
		users, members := recorded[c.event], freed[c.event]
		if (len(users) == 0 && len(members) == 0) || slices.Contains(events, c.event) {
			continue
		}
		k := keysOf(c.event)
		args := make([]any, 0, 3+len(users)+len(members))
		args = append(args, c.event, AdmissionsChannel, len(users))
		for _, u := range users {
			args = append(args, u)
		}
		for _, m := range members {
			args = append(args, m)
		}
		calls = append(calls, scriptCall{markRecordedScript, []string{k.unrecorded, k.active, k.config, k.freeing}, args})
		events = append(events, c.event)
	}
	if len(calls) == 0 {
		return recorded, nil
	}
	cmds, err := s.pipeline(ctx, calls)
	if err != nil {
		s.log.Warn("marking recorded admissions failed; a monitor tick records them again", "events", events, "err", err)
		return nil, nil
	}
	free := map[string]bool{}
	for i, ev := range events {
		if n, _ := cmds[i].Val().(int64); n == codeRebuilding {
			// Nobody told, no slot freed: they stay unrecorded (and
			// counted) through the rebuild.
			delete(recorded, ev)
			continue
		}
		free[ev] = len(freed[ev]) > 0
	}
	return recorded, free
}

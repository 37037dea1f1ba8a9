package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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

// recordArg is the scripts' record argument: '1' when the caller records
// admissions before anyone is told of them (the steps of queue.StepStore),
// '0' when the scripts tell the users themselves.
func recordArg(recorded bool) string {
	if recorded {
		return "1"
	}
	return "0"
}

// admittedUser is one admission a script made or found unrecorded: what
// its admit record holds.
type admittedUser struct {
	user          string
	score, served int64 // the place left, the join stamp served
	expires       int64 // the end of the stay
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
	m.ServedMark = mark
	return m, nil
}

// step returns c made at nowMs as the changes a step returns: its records
// (admissions, expiries, then releases and sweeps) and what to mark.
func (c changes) step(nowMs int64) queue.Changes {
	out := queue.Changes{EventID: c.event, Fresh: c.fresh, Freeing: c.freed}
	for _, a := range c.admitted {
		m := queue.NewRecord(queue.OpAdmit, c.event, a.user, nowMs)
		m.ExpiresAt, m.Score, m.ServedMark = a.expires, a.score, a.served
		out.Records = append(out.Records, m)
		out.Admitted = append(out.Admitted, a.user)
	}
	for _, u := range c.ended {
		out.Records = append(out.Records, queue.NewRecord(queue.OpExpire, c.event, u, nowMs))
	}
	out.Records = append(out.Records, c.other...)
	return out
}

// steps returns cs made at nowMs as the changes steps return.
func steps(cs []changes, nowMs int64) []queue.Changes {
	out := make([]queue.Changes, len(cs))
	for i, c := range cs {
		out[i] = c.step(nowMs)
	}
	return out
}

// MarkRecorded marks each event's admissions recorded, which tells their
// users, and frees the released slots named (mark_recorded.lua, one call
// per event in one round trip): the caller wrote their records and the log
// acknowledged them. It returns the events being rebuilt, where nobody is
// marked or told and no slot freed: they stay unrecorded (and counted)
// through the rebuild.
func (s *Store) MarkRecorded(ctx context.Context, marks []queue.Marks) ([]string, error) {
	var calls []scriptCall
	var events []string
	for _, mk := range marks {
		if len(mk.Users) == 0 && len(mk.Freeing) == 0 {
			continue
		}
		k := keysOf(mk.EventID)
		args := make([]any, 0, 3+len(mk.Users)+len(mk.Freeing))
		args = append(args, mk.EventID, AdmissionsChannel, len(mk.Users))
		for _, u := range mk.Users {
			args = append(args, u)
		}
		for _, m := range mk.Freeing {
			args = append(args, m)
		}
		calls = append(calls, scriptCall{markRecordedScript, []string{k.unrecorded, k.holders, k.config, k.freeing}, args})
		events = append(events, mk.EventID)
	}
	if len(calls) == 0 {
		return nil, nil
	}
	cmds, err := s.pipeline(ctx, calls)
	if err != nil {
		return nil, fmt.Errorf("redisstore: mark recorded in %v: %w", events, err)
	}
	var rebuilding []string
	for i, ev := range events {
		if n, _ := cmds[i].Val().(int64); n == codeRebuilding {
			rebuilding = append(rebuilding, ev)
		}
	}
	return rebuilding, nil
}

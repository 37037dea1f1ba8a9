package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
)

// StatusChunk is the most users one status script call reads; larger sets
// are split into several calls of the same pipelined round trip, so no call
// blocks Redis for long.
const StatusChunk = 1000

// Status reads where users stand in eventID, in one round trip, and marks
// the waiting ones as present (a poll's presence: now, unless a gateway
// holds it).
func (s *Store) Status(ctx context.Context, eventID string, users []string, nowMs int64) (queue.StatusBatch, error) {
	calls := statusCalls(eventID, users, nowMs, "")
	cmds, err := s.pipeline(ctx, calls)
	if err != nil {
		return queue.StatusBatch{}, fmt.Errorf("redisstore: status %s: %w", eventID, err)
	}
	var r queue.LineReply
	if err := readPlaces(cmds, &r); err != nil {
		return queue.StatusBatch{}, fmt.Errorf("redisstore: status %s: %w", eventID, err)
	}
	b := r.Head.Batch(len(users))
	for _, raw := range r.Synced {
		b.Places = append(b.Places, r.Head.Told(raw, nowMs))
		b.SlotAt = append(b.SlotAt, r.Head.SlotTold(raw, nowMs))
	}
	return b, nil
}

// Line reads req.Sync's places (held by req.Gateway), then eventID's head
// and journal after req.Since, in one round trip (queue.LineStore).
func (s *Store) Line(ctx context.Context, eventID string, req queue.LineRequest) (queue.LineReply, error) {
	var calls []scriptCall
	if len(req.Sync) > 0 {
		calls = statusCalls(eventID, req.Sync, req.NowMs, strconv.FormatUint(req.Gateway, 10))
	}
	k := keysOf(eventID)
	calls = append(calls, scriptCall{lineScript, []string{k.journal, k.waiting, k.holders, k.stats, k.config, k.control, k.gateways, k.called},
		[]any{req.NowMs, req.Gateway, req.Since.Epoch, req.Since.Seq}})
	cmds, err := s.pipeline(ctx, calls)
	if err != nil {
		return queue.LineReply{}, fmt.Errorf("redisstore: line %s: %w", eventID, err)
	}
	var r queue.LineReply
	if len(req.Sync) > 0 {
		if err := readPlaces(cmds[:len(cmds)-1], &r); err != nil {
			return queue.LineReply{}, fmt.Errorf("redisstore: line %s: %w", eventID, err)
		}
	}
	v, err := cmds[len(cmds)-1].Slice()
	if err != nil {
		return queue.LineReply{}, fmt.Errorf("redisstore: line %s: %w", eventID, err)
	}
	if err := decodeLineReply(v, &r); err != nil {
		return queue.LineReply{}, fmt.Errorf("redisstore: line %s: %w", eventID, err)
	}
	return r, nil
}

// Detach lets go of the presence of users that gateway held (queue.LineStore).
func (s *Store) Detach(ctx context.Context, eventID string, users []string, nowMs int64, gateway uint64) error {
	k := keysOf(eventID)
	args := make([]any, 0, 2+len(users))
	args = append(args, nowMs, gateway)
	for _, u := range users {
		args = append(args, u)
	}
	if err := runScript(ctx, s.c, detachScript, []string{k.seen, k.journal}, args...).Err(); err != nil {
		return fmt.Errorf("redisstore: detach from %s: %w", eventID, err)
	}
	return nil
}

// statusCalls are the status.lua calls that read users, StatusChunk a call.
func statusCalls(eventID string, users []string, nowMs int64, gateway string) []scriptCall {
	k := keysOf(eventID)
	keys := []string{k.waiting, k.holders, k.seen, k.stats, k.prequeue, k.config, k.control, k.unrecorded, k.served, k.journal,
		k.called, k.callplaces, k.claims, k.lapsed, k.moved}
	var calls []scriptCall
	for start := 0; start == 0 || start < len(users); start += StatusChunk {
		chunk := users[start:min(start+StatusChunk, len(users))]
		args := make([]any, 0, 2+len(chunk))
		args = append(args, nowMs, gateway)
		for _, u := range chunk {
			args = append(args, u)
		}
		calls = append(calls, scriptCall{statusScript, keys, args})
	}
	return calls
}

// readPlaces fills r's Head (the first call's) and Synced from status.lua's
// replies; each place is of its call's point in the journal.
func readPlaces(cmds []*redis.Cmd, r *queue.LineReply) error {
	for i, cmd := range cmds {
		v, err := cmd.Slice()
		if err != nil {
			return fmt.Errorf("unexpected status reply %v (%v)", cmd.Val(), err)
		}
		st, err := decodeStatusReply(v)
		if err != nil {
			return err
		}
		if i == 0 {
			r.Head = st.head
		}
		r.Synced = append(r.Synced, st.places...)
	}
	return nil
}

// statusFields is how many fields status.lua's reply has per user.
const statusFields = 7

// statusReply is status.lua's reply.
type statusReply struct {
	head   queue.Head
	places []queue.RawPlace // one per user asked about, each at the reply's point in the journal
}

// decodeStatusReply reads status.lua's reply (its header's "Returns"):
// the head, the journal's point, then seven fields per user.
func decodeStatusReply(v []any) (statusReply, error) {
	var st statusReply
	if len(v) < 3 || (len(v)-3)%statusFields != 0 {
		return st, fmt.Errorf("unexpected status reply %v", v)
	}
	head, err := decodeHead(v[0])
	if err != nil {
		return st, err
	}
	st.head = head
	at, err := decodePos(v[1], v[2])
	if err != nil {
		return st, err
	}
	for j := 3; j < len(v); j += statusFields {
		p := queue.RawPlace{At: at}
		nums := [5]int64{}
		for f := range 5 {
			n, ok := v[j+f].(int64)
			if !ok {
				return st, fmt.Errorf("unexpected status field %v", v[j+f])
			}
			nums[f] = n
		}
		p.Rank, p.StayUntil, p.Unrecorded, p.Drawn, p.SlotAt = nums[0], nums[1], nums[2] == 1, nums[3], max(nums[4], 0)
		if sc, _ := v[j+5].(string); sc != "" {
			if p.Score, err = strconv.ParseFloat(sc, 64); err != nil {
				return st, fmt.Errorf("unexpected score %q", sc)
			}
		}
		turn, ok := v[j+6].(int64)
		if !ok {
			return st, fmt.Errorf("unexpected status field %v", v[j+6])
		}
		p.Turn = turn
		st.places = append(st.places, p)
	}
	return st, nil
}

// decodeLineReply reads line.lua's reply (its header's "Returns") into
// r's Head, At, Reset, Elements and Ends. An element that is not what
// journal_lib.lua writes makes it a reset: every place is learnt again.
func decodeLineReply(v []any, r *queue.LineReply) error {
	if len(v) != 6 {
		return fmt.Errorf("unexpected line reply %v", v)
	}
	var err error
	if r.Head, err = decodeHead(v[0]); err != nil {
		return err
	}
	if r.At, err = decodePos(v[1], v[2]); err != nil {
		return err
	}
	r.Reset = v[3] == int64(1)
	els, _ := v[4].([]any)
	for _, e := range els {
		s, _ := e.(string)
		el, err := decodeElement(s)
		if err != nil {
			r.Reset, r.Elements = true, nil
			break
		}
		r.Elements = append(r.Elements, el)
	}
	ends, _ := v[5].([]any)
	for _, e := range ends {
		n, _ := e.(int64)
		r.Ends = append(r.Ends, n)
	}
	return nil
}

// decodeHead reads line_head's head (line_lib.lua).
func decodeHead(v any) (queue.Head, error) {
	f, ok := v.([]any)
	if !ok || len(f) != 11 {
		return queue.Head{}, fmt.Errorf("unexpected head %v", v)
	}
	n := [11]int64{}
	for i := range f {
		if n[i], ok = f[i].(int64); !ok {
			return queue.Head{}, fmt.Errorf("unexpected head %v", v)
		}
	}
	return queue.Head{Total: n[0], AdmittedTotal: n[1], AdmitPerMinute: n[2], OpensAt: n[3], Rebuilding: n[4] == 1,
		Capacity: n[5], HoldMs: n[6], Turns: queue.Turns{Called: n[7], CalledTotal: n[8], ClaimedTotal: n[9], LapsedTotal: n[10]}}, nil
}

// decodePos reads a point in the journal: its epoch and seq
// (journal_lib.lua's journal_head).
func decodePos(epoch, seq any) (queue.JournalPos, error) {
	e, ok1 := epoch.(string)
	n, ok2 := seq.(int64)
	if !ok1 || !ok2 {
		return queue.JournalPos{}, fmt.Errorf("unexpected journal point %v %v", epoch, seq)
	}
	return queue.JournalPos{Epoch: e, Seq: n}, nil
}

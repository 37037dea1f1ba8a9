package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
)

// Release gives userID's slot of eventID back; it reports whether they held
// an unexpired slot (so releasing twice frees one slot), and how many item
// holds ended unconfirmed: the user's, deleted in the same step, and those
// of holders expired by the admission the fast track (Options.FastTrack)
// runs for the freed slot in the release's step, telling its users.
// ReleaseStep is the release of a caller that records it.
// While the event is rebuilt it fails with queue.ErrRebuilding.
func (s *Store) Release(ctx context.Context, eventID, userID string, nowMs int64) (bool, int, error) {
	released, ended, _, err := s.release(ctx, eventID, userID, nowMs, false)
	return released, ended, err
}

// ReleaseStep is Release for a caller that records it (package
// recording): the slot is handed on only once the release record is in the
// log (release.lua's freeing, named in the changes; MarkRecorded frees it,
// then HandOn admits), and a release record that cannot be written keeps
// the slot counted until a monitor tick writes it (TickStep).
func (s *Store) ReleaseStep(ctx context.Context, eventID, userID string, nowMs int64) (bool, int, queue.Changes, error) {
	released, ended, c, err := s.release(ctx, eventID, userID, nowMs, true)
	if err != nil {
		return false, 0, queue.Changes{}, err
	}
	return released, ended, c.step(nowMs), nil
}

func (s *Store) release(ctx context.Context, eventID, userID string, nowMs int64, recorded bool) (bool, int, changes, error) {
	k := keysOf(eventID)
	v, err := runScript(ctx, s.c, releaseScript, append(k.admission(), k.released),
		userID, nowMs, s.fastTrack, eventID, AdmissionsChannel, recordArg(recorded), queue.ReleasedKeep.Milliseconds()).Result()
	if err != nil {
		return false, 0, changes{}, fmt.Errorf("redisstore: release %s in %s: %w", userID, eventID, err)
	}
	if n, ok := v.(int64); ok && n == codeRebuilding {
		return false, 0, changes{}, queue.ErrRebuilding
	}
	r, err := decodeReleaseReply(v)
	if err != nil {
		return false, 0, changes{}, fmt.Errorf("redisstore: release %s in %s: %w", userID, eventID, err)
	}
	c := r.admit.changes(eventID)
	if r.released {
		m := queue.NewRecord(queue.OpRelease, eventID, userID, nowMs)
		m.ServedMark = r.served
		c.other = append(c.other, m)
	}
	if r.freeing != "" {
		c.freed = []string{r.freeing}
	}
	// The holds ended need no record of their own: the release record, and
	// the expire record of a holder expired, end their holds in the log
	// too (queue.Replay).
	return r.released, int(r.holdsExpired), c, nil
}

// releaseReply is release.lua's list reply.
type releaseReply struct {
	released     bool // the user held an unexpired slot
	admit        admitReply
	holdsExpired int64  // item holds ended: the user's, and the expired holders'
	served       int64  // the released admission's served mark (0: none)
	freeing      string // the member added to freeing ("": none)
}

// decodeReleaseReply reads release.lua's reply (its header's "Returns":
// {released, expiresAt, admitted, expired, ended, served, freeing}).
func decodeReleaseReply(v any) (releaseReply, error) {
	var r releaseReply
	l, ok := v.([]any)
	if !ok || len(l) != 7 {
		return r, fmt.Errorf("unexpected reply %v", v)
	}
	released, _ := l[0].(int64)
	r.released = released == 1
	r.holdsExpired, _ = l[4].(int64)
	r.served, _ = l[5].(int64)
	r.freeing, _ = l[6].(string)
	var err error
	r.admit, err = decodeAdmit(l[1], l[2], l[3])
	return r, err
}

// HandOn runs the admission step for eventID's room freed by a release
// whose record is in the log (the fast track's batch at most; nothing
// without a fast track), its admissions unrecorded, and returns the item
// holds that ended with expired holders, and its changes.
func (s *Store) HandOn(ctx context.Context, eventID string, nowMs int64) (int, queue.Changes, error) {
	if s.fastTrack <= 0 {
		return 0, queue.Changes{EventID: eventID}, nil
	}
	k := keysOf(eventID)
	v, err := runScript(ctx, s.c, tickScript, k.tick(), nowMs, s.fastTrack, eventID, AdmissionsChannel, recordArg(true), 0, 0, queue.ReleasedKeep.Milliseconds()).Result()
	if err != nil {
		return 0, queue.Changes{}, fmt.Errorf("redisstore: hand on in %s: %w", eventID, err)
	}
	var r queue.TickResult
	c, err := tickChanges(eventID, []any{}, v, nowMs, &r)
	if err != nil {
		return 0, queue.Changes{}, fmt.Errorf("redisstore: hand on in %s: %w", eventID, err)
	}
	return r.HoldsExpired, c.step(nowMs), nil
}

// Released lists eventID's released admissions whose hold ends after nowMs
// less queue.ReleasedKeep (ReleasedKey): one ZRANGEBYSCORE, read by the
// guards every few seconds. A token stays listed through the skew a guard
// tolerates past its end, in which it would still verify.
func (s *Store) Released(ctx context.Context, eventID string, nowMs int64) ([]queue.ReleasedAdmission, error) {
	from := nowMs - queue.ReleasedKeep.Milliseconds()
	l, err := s.c.ZRangeByScore(ctx, ReleasedKey(eventID), &redis.ZRangeBy{Min: "(" + strconv.FormatInt(from, 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: released of %s: %w", eventID, err)
	}
	out := make([]queue.ReleasedAdmission, 0, len(l))
	for _, m := range l {
		end, user, ok := strings.Cut(m, "|")
		ms, err := strconv.ParseInt(end, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("redisstore: released of %s: bad member %q", eventID, m)
		}
		out = append(out, queue.ReleasedAdmission{UserID: user, StayUntil: ms})
	}
	return out, nil
}

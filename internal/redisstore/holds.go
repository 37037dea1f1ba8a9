package redisstore

import (
	"context"
	"fmt"

	"github.com/waitq/waitq/internal/queue"
)

// holdRefusals are the scripts' refusals of a hold, release or confirm as
// domain errors.
var holdRefusals = map[int64]error{
	codeRebuilding: queue.ErrRebuilding,
	codeNoEvent:    queue.ErrEventNotFound,
	codeNoSlot:     queue.ErrNoSlot,
	codeItemHeld:   queue.ErrItemHeld,
	codeHoldLimit:  queue.ErrHoldLimit,
	codeItemSold:   queue.ErrItemSold,
	codeNotHolder:  queue.ErrNotHolder,
}

// runHold runs one of the hold scripts and returns its list reply, or the
// refusal it answered.
func (s *Store) runHold(ctx context.Context, what string, script scriptCall) ([]int64, error) {
	v, err := runScript(ctx, s.c, script.script, script.keys, script.args...).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: %s: %w", what, err)
	}
	if n, ok := v.(int64); ok {
		if refusal, ok := holdRefusals[n]; ok {
			return nil, refusal
		}
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("redisstore: %s: unexpected reply %v", what, v)
	}
	out := make([]int64, len(l))
	for i, x := range l {
		if out[i], ok = x.(int64); !ok {
			return nil, fmt.Errorf("redisstore: %s: unexpected reply %v", what, v)
		}
	}
	return out, nil
}

// Hold holds item for userID in eventID (hold.lua). A caller that records
// (package recording) records the hold before it answers.
func (s *Store) Hold(ctx context.Context, eventID, userID, item string, nowMs int64) (queue.HoldResult, error) {
	k := keysOf(eventID)
	what := fmt.Sprintf("hold %s for %s in %s", item, userID, eventID)
	v, err := s.runHold(ctx, what, scriptCall{holdScript,
		[]string{k.config, k.holders, k.unrecorded, k.holds, k.sold, k.items},
		[]any{userID, item, nowMs}})
	if err != nil {
		return queue.HoldResult{}, err
	}
	r, err := decodeHoldReply(v)
	if err != nil {
		return queue.HoldResult{}, fmt.Errorf("redisstore: %s: %w", what, err)
	}
	h := queue.Hold{EventID: eventID, Item: item, UserID: userID, ExpiresAt: r.expiresAt}
	return queue.HoldResult{Hold: h, Created: r.created, Replaced: r.replaced}, nil
}

// holdReply is hold.lua's list reply.
type holdReply struct {
	created   bool // a new hold, not the user's own again
	expiresAt int64
	replaced  bool // a dead hold of another user's replaced
}

// decodeHoldReply reads hold.lua's list reply (its header's "Returns":
// {created, expiresAt, replaced}).
func decodeHoldReply(v []int64) (holdReply, error) {
	if len(v) != 3 {
		return holdReply{}, fmt.Errorf("unexpected reply %v", v)
	}
	return holdReply{created: v[0] == 1, expiresAt: v[1], replaced: v[2] == 1}, nil
}

// Unhold gives item back if userID holds it (unhold.lua, one
// compare-and-delete) and reports whether a live hold was removed.
func (s *Store) Unhold(ctx context.Context, eventID, userID, item string, nowMs int64) (bool, error) {
	_, live, err := s.UnholdStep(ctx, eventID, userID, item, nowMs)
	return live, err
}

// UnholdStep is Unhold, also reporting whether a hold (live or dead) was
// removed: one to record.
func (s *Store) UnholdStep(ctx context.Context, eventID, userID, item string, nowMs int64) (removed, live bool, err error) {
	k := keysOf(eventID)
	what := fmt.Sprintf("unhold %s by %s in %s", item, userID, eventID)
	v, err := s.runHold(ctx, what, scriptCall{unholdScript,
		[]string{k.config, k.holders, k.holds, k.sold, k.items},
		[]any{userID, item, nowMs}})
	if err != nil {
		return false, false, err
	}
	r, err := decodeUnholdReply(v)
	if err != nil {
		return false, false, fmt.Errorf("redisstore: %s: %w", what, err)
	}
	return r.removed, r.live, nil
}

// unholdReply is unhold.lua's list reply.
type unholdReply struct {
	removed bool // the user's hold (live or dead) deleted
	live    bool // it was live
}

// decodeUnholdReply reads unhold.lua's list reply (its header's "Returns":
// {removed, live}).
func decodeUnholdReply(v []int64) (unholdReply, error) {
	if len(v) != 2 {
		return unholdReply{}, fmt.Errorf("unexpected reply %v", v)
	}
	return unholdReply{removed: v[0] == 1, live: v[1] == 1}, nil
}

// Confirm sells item to userID, who holds it (confirm.lua). A caller that
// records (package recording) records the sale before it answers, again on
// every repeat.
func (s *Store) Confirm(ctx context.Context, eventID, userID, item string, nowMs int64) (queue.Sale, bool, error) {
	k := keysOf(eventID)
	what := fmt.Sprintf("confirm %s for %s in %s", item, userID, eventID)
	v, err := s.runHold(ctx, what, scriptCall{confirmScript,
		[]string{k.config, k.holders, k.unrecorded, k.holds, k.sold, k.items},
		[]any{userID, item, nowMs}})
	if err != nil {
		return queue.Sale{}, false, err
	}
	return queue.Sale{EventID: eventID, Item: item, UserID: userID}, decodeConfirmReply(v), nil
}

// Unsell undoes item's sale and returns it; ok is false when the item is
// not sold.
func (s *Store) Unsell(ctx context.Context, eventID, item string, nowMs int64) (queue.Sale, bool, error) {
	return s.UnsellStep(ctx, eventID, item, nowMs, nil)
}

// UnsellStep is Unsell with before (when not nil) run on the sale about to
// be undone, before unsell.lua frees the item if still sold to that buyer:
// a caller that records (package recording) writes the unsold record
// there, and its error ends the call with nothing changed.
func (s *Store) UnsellStep(ctx context.Context, eventID, item string, nowMs int64, before func(queue.Sale) error) (queue.Sale, bool, error) {
	what := fmt.Sprintf("unsell %s in %s", item, eventID)
	for range 3 { // the sale changed hands between the read and the script: again
		cur, err := s.Item(ctx, eventID, item, nowMs)
		if err != nil || cur.State != queue.ItemSold {
			return queue.Sale{}, false, err
		}
		if before != nil {
			if err := before(queue.Sale{EventID: eventID, Item: item, UserID: cur.UserID}); err != nil {
				return queue.Sale{}, false, err
			}
		}
		undone, buyer, err := s.unsell(ctx, eventID, item, cur.UserID)
		switch {
		case err != nil:
			return queue.Sale{}, false, err
		case undone:
			return queue.Sale{EventID: eventID, Item: item, UserID: buyer}, true, nil
		case buyer == "":
			return queue.Sale{}, false, nil
		}
	}
	return queue.Sale{}, false, fmt.Errorf("redisstore: %s: the sale kept changing hands", what)
}

// unsell frees item if it is still sold to buyer (unsell.lua); it reports
// whether the sale was undone now, and the item's buyer ("": not sold).
func (s *Store) unsell(ctx context.Context, eventID, item, buyer string) (bool, string, error) {
	k := keysOf(eventID)
	what := fmt.Sprintf("unsell %s in %s", item, eventID)
	v, err := runScript(ctx, s.c, unsellScript, []string{k.config, k.sold, k.items}, item, buyer).Result()
	if err != nil {
		return false, "", fmt.Errorf("redisstore: %s: %w", what, err)
	}
	if n, ok := v.(int64); ok {
		if refusal, ok := holdRefusals[n]; ok {
			return false, "", refusal
		}
	}
	undone, soldTo, err := decodeUnsellReply(v)
	if err != nil {
		return false, "", fmt.Errorf("redisstore: %s: %w", what, err)
	}
	return undone, soldTo, nil
}

// decodeConfirmReply reads confirm.lua's list reply (its header's
// "Returns": {sold}): whether the item was sold now, not to the user before.
func decodeConfirmReply(v []int64) bool { return len(v) == 1 && v[0] == 1 }

// decodeUnsellReply reads unsell.lua's list reply (its header's "Returns":
// {undone, buyer}): whether the sale was undone now, and the item's buyer
// ("" when it is not sold).
func decodeUnsellReply(v any) (undone bool, buyer string, err error) {
	l, ok := v.([]any)
	if !ok || len(l) != 2 {
		return false, "", fmt.Errorf("unexpected reply %v", v)
	}
	n, _ := l[0].(int64)
	buyer, _ = l[1].(string)
	return n == 1, buyer, nil
}

// Items returns eventID's items held live or sold at nowMs (items.lua).
func (s *Store) Items(ctx context.Context, eventID string, nowMs int64) (map[string]queue.ItemState, error) {
	k := keysOf(eventID)
	v, err := runScript(ctx, s.c, itemsScript, []string{k.holders, k.holds, k.sold}, nowMs).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("redisstore: items of %s: %w", eventID, err)
	}
	return decodeItemsReply(v), nil
}

// decodeItemsReply reads items.lua's reply (its header's "Returns": pairs
// item, state).
func decodeItemsReply(v []string) map[string]queue.ItemState {
	out := make(map[string]queue.ItemState, len(v)/2)
	for i := 0; i+1 < len(v); i += 2 {
		out[v[i]] = queue.ItemState(v[i+1])
	}
	return out
}

// Item returns the state of item in eventID at nowMs (item.lua): sold to
// its buyer, held live until its end by its buyer, or free.
func (s *Store) Item(ctx context.Context, eventID, item string, nowMs int64) (queue.ItemHold, error) {
	k := keysOf(eventID)
	v, err := runScript(ctx, s.c, itemScript, []string{k.config, k.holders, k.holds, k.sold}, item, nowMs).Result()
	if err != nil {
		return queue.ItemHold{}, fmt.Errorf("redisstore: item %s of %s: %w", item, eventID, err)
	}
	if n, ok := v.(int64); ok && n == codeNoEvent {
		return queue.ItemHold{}, queue.ErrEventNotFound
	}
	h, err := decodeItemReply(v)
	if err != nil {
		return queue.ItemHold{}, fmt.Errorf("redisstore: item %s of %s: %w", item, eventID, err)
	}
	h.EventID, h.Item = eventID, item
	return h, nil
}

// decodeItemReply reads item.lua's list reply (its header's "Returns":
// {state, expiresAt, user}) into an ItemHold without its event and item.
func decodeItemReply(v any) (queue.ItemHold, error) {
	l, ok := v.([]any)
	if !ok || len(l) != 3 {
		return queue.ItemHold{}, fmt.Errorf("unexpected reply %v", v)
	}
	state, _ := l[0].(string)
	end, _ := l[1].(int64)
	user, _ := l[2].(string)
	return queue.ItemHold{State: queue.ItemState(state), ExpiresAt: end, UserID: user}, nil
}

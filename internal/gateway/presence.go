package gateway

import "context"

// The presence a tracker holds for its gateway's users: taken when a user
// is read first (status.lua) and again at each new socket of theirs here
// (Fresh), let go when their last socket here closes (detach.lua), batched
// every second (docs/data.md, "Presence held by a gateway").

// Fresh has users of eventID, who opened a socket here, read from Redis at
// their next Status, not from the journal: the read takes their presence
// for this gateway again. Another gateway may have taken it since this one
// did (the user's newest socket was there), and that gateway may die
// without letting go: the user's newest socket is here now.
func (t *tracker) Fresh(eventID string, users []string) {
	l := t.line(eventID)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range users {
		if f := l.users[u]; f != nil {
			l.known[u] = *f // told their last place if the read is put off
			l.unfollow(u)
		}
	}
}

// Leave stops following user of eventID, whose last socket here closed,
// and lets go of their presence (their disconnect grace runs from now) at
// the next Flush.
func (t *tracker) Leave(eventID, user string) {
	l := t.line(eventID)
	l.mu.Lock()
	l.unfollow(user)
	delete(l.known, user)
	l.mu.Unlock()
	t.detachMu.Lock()
	if t.detach[eventID] == nil {
		t.detach[eventID] = map[string]bool{}
	}
	t.detach[eventID][user] = true
	t.detachMu.Unlock()
}

// keep cancels a pending let-go of users read again (their presence is
// taken again).
func (t *tracker) keep(eventID string, users []string) {
	t.detachMu.Lock()
	defer t.detachMu.Unlock()
	for _, u := range users {
		delete(t.detach[eventID], u)
	}
}

// Flush lets go of the presences Leave noted, each event under its line's
// lock (a user read again meanwhile is kept); those that fail are tried
// again at the next Flush.
func (t *tracker) Flush(ctx context.Context, nowMs int64) error {
	t.detachMu.Lock()
	events := make([]string, 0, len(t.detach))
	for ev, us := range t.detach {
		if len(us) == 0 {
			delete(t.detach, ev)
			continue
		}
		events = append(events, ev)
	}
	t.detachMu.Unlock()
	var firstErr error
	for _, ev := range events {
		l := t.line(ev)
		l.mu.Lock()
		t.detachMu.Lock()
		users := make([]string, 0, len(t.detach[ev]))
		for u := range t.detach[ev] {
			users = append(users, u)
		}
		t.detachMu.Unlock()
		err := t.store.Detach(ctx, ev, users, nowMs, t.id)
		if err == nil {
			t.keep(ev, users)
		} else if firstErr == nil {
			firstErr = err
		}
		l.mu.Unlock()
	}
	return firstErr
}

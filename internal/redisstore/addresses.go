package redisstore

import (
	"context"
	"fmt"

	"github.com/waitq/waitq/internal/queue"
)

var (
	_ queue.AddressStore = (*Store)(nil)
	_ queue.MailStore    = (*Store)(nil)
)

// addressScan is how many addresses of an event one DueMails call looks at
// for those whose people have no place any more (mails.lua).
const addressScan = 100

// addressKeys are address.lua's KEYS, in its header's order.
func addressKeys(ev string) []string {
	return []string{AddressesKey(ev), AddressCountKey(ev), ConfigKey(ev), WaitingKey(ev), CalledKey(ev), PrequeueKey(ev)}
}

// SetAddress keeps the address userID left in eventID (queue.AddressStore;
// address.lua). The caller checked it (queue.CheckAddress).
func (s *Store) SetAddress(ctx context.Context, eventID, userID, address string) error {
	n, err := runScript(ctx, s.c, addressScript, addressKeys(eventID), userID, address, queue.AddressKey(address), queue.MaxUsersPerAddress).Int64()
	if err != nil {
		return fmt.Errorf("redisstore: set address in %s: %w", eventID, err)
	}
	switch n {
	case codeOK:
		return nil
	case codeNoEvent:
		return queue.ErrEventNotFound
	case codeNoPlace:
		return queue.Errorf(queue.CodeNoPlace, "you have no place in event %s to be called for: join first", eventID)
	case codeAddressLimit:
		return queue.Errorf(queue.CodeEmailLimit, "this address is already left by %d people of event %s", queue.MaxUsersPerAddress, eventID)
	}
	return fmt.Errorf("redisstore: set address in %s: unexpected reply %d", eventID, n)
}

// RemoveAddress forgets userID's address in eventID (queue.AddressStore).
func (s *Store) RemoveAddress(ctx context.Context, eventID, userID string) (bool, error) {
	n, err := runScript(ctx, s.c, addressScript, addressKeys(eventID), userID, "", "", 0).Int64()
	if err != nil {
		return false, fmt.Errorf("redisstore: remove address in %s: %w", eventID, err)
	}
	return n == 1, nil
}

// DueMails runs mails.lua for each of eventIDs in one round trip
// (queue.MailStore).
func (s *Store) DueMails(ctx context.Context, eventIDs []string, nowMs int64) ([]queue.Mail, error) {
	calls := make([]scriptCall, 0, len(eventIDs))
	for _, ev := range eventIDs {
		k := keysOf(ev)
		calls = append(calls, scriptCall{mailsScript,
			[]string{AddressesKey(ev), AddressCountKey(ev), k.config, k.waiting, k.called, k.callplaces, k.prequeue, k.stats},
			[]any{nowMs, addressScan}})
	}
	if len(calls) == 0 {
		return nil, nil
	}
	cmds, err := s.pipeline(ctx, calls)
	if err != nil {
		return nil, fmt.Errorf("redisstore: due mails of %d events: %w", len(eventIDs), err)
	}
	var out []queue.Mail
	for i, ev := range eventIDs {
		if out, err = decodeMailsReply(out, ev, cmds[i].Val()); err != nil {
			return nil, fmt.Errorf("redisstore: due mails of %s: %w", ev, err)
		}
	}
	return out, nil
}

// decodeMailsReply appends the mails of mails.lua's reply (its header's
// "Returns": quintuples user, address, kind, place, end of the window or
// people ahead) to dst.
func decodeMailsReply(dst []queue.Mail, ev string, v any) ([]queue.Mail, error) {
	l, ok := v.([]any)
	if !ok || len(l)%5 != 0 {
		return dst, fmt.Errorf("mails: unexpected reply of %d values", len(l))
	}
	for i := 0; i < len(l); i += 5 {
		m := queue.Mail{EventID: ev}
		m.UserID, _ = l[i].(string)
		m.Address, _ = l[i+1].(string)
		kind, _ := l[i+2].(string)
		m.Kind = queue.MailKind(kind)
		m.Place, _ = l[i+3].(int64)
		last, _ := l[i+4].(int64)
		if m.Kind == queue.MailCall {
			m.Until = last
		} else {
			m.Ahead = last
		}
		dst = append(dst, m)
	}
	return dst, nil
}

package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/waitq/waitq/internal/queue"
)

// writeHolds replaces the event's holds, sales and buyers' items with
// st's (WriteRebuilt, after the line and the holders), merged with what
// Redis still has: its sales, and its holds still live by st's holders
// (nothing changes them while the rebuild mark stands, and a hold's record
// acknowledged after the end the rebuild read is not in st). A hold whose
// item is sold is left out.
func (s *Store) writeHolds(ctx context.Context, st queue.Rebuilt, nowMs int64) error {
	ev := st.Event.ID
	k := keysOf(ev)
	holds, err := s.c.HGetAll(ctx, k.holds).Result()
	if err != nil {
		return err
	}
	sold, err := s.c.HGetAll(ctx, k.sold).Result()
	if err != nil {
		return err
	}
	merged := make(map[string]queue.Hold, len(st.Holds)+len(holds))
	for item, h := range st.Holds {
		merged[item] = h
	}
	buyers := make(map[string]string, len(st.Sold)+len(sold))
	for item, u := range st.Sold {
		buyers[item] = u
	}
	for item, u := range sold {
		if _, ok := buyers[item]; !ok {
			buyers[item] = u
		}
	}
	for item, v := range holds {
		end, user, ok := strings.Cut(v, "|")
		if !ok {
			continue
		}
		exp, _ := strconv.ParseInt(end, 10, 64)
		if _, taken := merged[item]; !taken && exp > nowMs && st.Holders[user] > nowMs {
			merged[item] = queue.Hold{EventID: ev, Item: item, UserID: user, ExpiresAt: exp}
		}
	}
	items := map[string][]string{}
	for item, u := range buyers {
		delete(merged, item)
		items[u] = append(items[u], item)
	}
	for item, h := range merged {
		items[h.UserID] = append(items[h.UserID], item)
	}
	p := s.c.Pipeline()
	p.Del(ctx, k.holds, k.sold, k.items)
	for item, h := range merged {
		p.HSet(ctx, k.holds, item, fmt.Sprintf("%d|%s", h.ExpiresAt, h.UserID))
	}
	for item, u := range buyers {
		p.HSet(ctx, k.sold, item, u)
	}
	for u, its := range items {
		p.HSet(ctx, k.items, u, strings.Join(its, " "))
	}
	_, err = p.Exec(ctx)
	return err
}

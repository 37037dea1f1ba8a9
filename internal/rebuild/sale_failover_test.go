package rebuild_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
)

// TestARebuildKeepsTheFirstRecordedSale: a confirm answered 200 (its sold
// record in the log) is lost with a Redis failover (the promoted replica
// had not received the write: its holds, sold and items are as before the
// confirm). A second buyer then holds and buys the same item, also
// answered 200: the item is sold twice, live, and the log holds both sold
// records. The rebuild keeps the first recorded sale, not the buyer whose
// id sorts first (the second buyer's here).
func TestARebuildKeepsTheFirstRecordedSale(t *testing.T) {
	e := newEnv(t, 10)
	e.sys.StartConsumerInto(e.sys.ConsumerConfig(), e.store)
	base := time.Now().UnixMilli()
	first, second := user(1), user(0) // the second buyer's id sorts first
	e.sys.Join(e.ev, first, base)
	e.sys.Join(e.ev, second, base+1)
	e.waitLine(2)
	if r := e.tick(time.Now(), 0); len(r.Admitted) != 2 {
		t.Fatalf("admitted %v, want 2", r.Admitted)
	}
	now := func() int64 { return time.Now().UnixMilli() }
	rdb := e.sys.Store.Client()
	keys := []string{redisstore.HoldsKey(e.ev), redisstore.SoldKey(e.ev), redisstore.ItemsKey(e.ev)}
	// What the replica has: nothing held, nothing sold.
	replica := map[string]string{}
	for _, k := range keys {
		v, err := rdb.Dump(e.ctx, k).Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		replica[k] = v
	}
	at := now() // the second sale is stamped after the first
	if _, err := e.store.Hold(e.ctx, e.ev, first, "S1", at); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.Confirm(e.ctx, e.ev, first, "S1", at); err != nil {
		t.Fatalf("the first buyer's confirm: %v", err)
	}
	// The failover: the hold and the sale are gone from Redis, not from the log.
	for k, v := range replica {
		if err := rdb.Del(e.ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
		if v != "" {
			if err := rdb.RestoreReplace(e.ctx, k, 0, v).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := e.store.Hold(e.ctx, e.ev, second, "S1", at+5); err != nil {
		t.Fatalf("the second buyer's hold after the failover: %v", err)
	}
	if _, _, err := e.store.Confirm(e.ctx, e.ev, second, "S1", at+5); err != nil {
		t.Fatalf("the second buyer's confirm after the failover: %v", err)
	}
	t.Logf("S1 was answered sold to %s, then to %s after the failover (sold twice live)", first, second)

	if err := rdb.FlushAll(e.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rebuilder().Rebuild(e.ctx, e.ev); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.Item(e.ctx, e.ev, "S1", now())
	if err != nil || got.State != queue.ItemSold || got.UserID != first {
		t.Fatalf("S1 after the rebuild: %+v %v, want sold to %s, the first recorded sale", got, err, first)
	}
}

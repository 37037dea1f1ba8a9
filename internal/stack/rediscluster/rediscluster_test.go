package rediscluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/testkit/testredis"
)

// TestClusterServesAndMovesASlot starts a cluster, writes through a cluster
// client, moves the key's slot to another master and reads it back there.
func TestClusterServesAndMovesASlot(t *testing.T) {
	c := testredis.StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rc.Close()
	owners := map[string]bool{}
	for s := 0; s < 16384; s += 1000 {
		o, err := c.Owner(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		owners[o] = true
	}
	if len(owners) != 3 {
		t.Fatalf("slots are served by %v, want the 3 masters", owners)
	}
	keys := []string{"a:{x}:1", "a:{x}:2", "a:{x}:3"}
	for _, k := range keys {
		if err := rc.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slot, err := c.Slot(ctx, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	from, err := c.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	to := c.Addrs()[(slices.Index(c.Addrs(), from)+1)%3]
	if err := c.MoveSlot(ctx, slot, to, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if now, err := c.Owner(ctx, slot); err != nil || now != to {
		t.Fatalf("slot %d is on %s (%v), want %s", slot, now, err, to)
	}
	direct := redis.NewClient(&redis.Options{Addr: to})
	defer direct.Close()
	for _, k := range keys {
		if v, err := direct.Get(ctx, k).Result(); err != nil || v != k {
			t.Errorf("%s on the new master: %q, %v", k, v, err)
		}
		if v, err := rc.Get(ctx, k).Result(); err != nil || v != k {
			t.Errorf("%s through the cluster client: %q, %v", k, v, err)
		}
	}
}

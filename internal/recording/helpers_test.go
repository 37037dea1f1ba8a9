package recording_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// The scenes of redisstore's tests, over a store whose changes are
// recorded.

var newStore, mustNew, putLine = testsys.NewStore, testsys.MustStore, testsys.PutLine

func msg(op queue.Op, ev, user string, ts int64) queue.Message {
	return queue.Message{V: 1, Op: op, EventID: ev, UserID: user, TS: ts, ID: "x"}
}

func tick(t *testing.T, s queue.GatewayStore, ev string, now int64, batch int) queue.TickResult {
	t.Helper()
	res, err := s.Tick(context.Background(), queue.TickRequest{EventIDs: []string{ev}, NowMs: now, AdmitBatch: batch, PresenceCutoffMs: 0, SweepLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

func line(t *testing.T, c *redis.Client, ev string) []redis.Z {
	t.Helper()
	z, err := c.ZRangeWithScores(context.Background(), redisstore.WaitingKey(ev), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return z
}

package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/ingest.lua
	ingestSrc string
	//go:embed lua/delete_event.lua
	deleteEventSrc string
	//go:embed lua/admit.lua
	admitSrc string
	//go:embed lua/release.lua
	releaseSrc string
	//go:embed lua/status.lua
	statusSrc string
	//go:embed lua/sweep.lua
	sweepSrc string

	ingestScript      = redis.NewScript(ingestSrc)
	deleteEventScript = redis.NewScript(deleteEventSrc)
	admitScript       = redis.NewScript(admitSrc)
	releaseScript     = redis.NewScript(releaseSrc)
	statusScript      = redis.NewScript(statusSrc)
	sweepScript       = redis.NewScript(sweepSrc)

	allScripts = []*redis.Script{ingestScript, deleteEventScript, admitScript, releaseScript, statusScript, sweepScript}
)

// loadScripts makes every script known to the server(s), so that EVALSHA in a
// pipeline finds them. A restarted Redis forgets them: callers reload on
// NOSCRIPT.
func loadScripts(ctx context.Context, c redis.UniversalClient) error {
	for _, s := range allScripts {
		var err error
		if cc, ok := c.(*redis.ClusterClient); ok {
			err = cc.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
				return s.Load(ctx, shard).Err()
			})
		} else {
			err = s.Load(ctx, c).Err()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// runScript runs s with EVALSHA, loading it once if the server does not know it.
func runScript(ctx context.Context, c redis.UniversalClient, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	cmd := s.EvalSha(ctx, c, keys, args...)
	if isNoScript(cmd.Err()) {
		if err := loadScripts(ctx, c); err != nil {
			return redis.NewCmdResult(nil, errors.Join(cmd.Err(), err))
		}
		cmd = s.EvalSha(ctx, c, keys, args...)
	}
	return cmd
}

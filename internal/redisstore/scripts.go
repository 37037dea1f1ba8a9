package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/admission_keys.lua
	admissionKeysSrc string
	//go:embed lua/adaptive.lua
	adaptiveSrc string
	//go:embed lua/admission.lua
	admissionSrc string
	//go:embed lua/ingest.lua
	ingestSrc string
	//go:embed lua/bulk_lib.lua
	bulkLibSrc string
	//go:embed lua/marks_lib.lua
	marksLibSrc string
	//go:embed lua/delete_event.lua
	deleteEventSrc string
	//go:embed lua/tick.lua
	tickSrc string
	//go:embed lua/release.lua
	releaseSrc string
	//go:embed lua/status.lua
	statusSrc string
	//go:embed lua/sweep.lua
	sweepSrc string
	//go:embed lua/health.lua
	healthSrc string
	//go:embed lua/mark_recorded.lua
	markRecordedSrc string
	//go:embed lua/hold_lib.lua
	holdLibSrc string
	//go:embed lua/hold.lua
	holdSrc string
	//go:embed lua/unhold.lua
	unholdSrc string
	//go:embed lua/confirm.lua
	confirmSrc string
	//go:embed lua/unsell.lua
	unsellSrc string
	//go:embed lua/item.lua
	itemSrc string
	//go:embed lua/items.lua
	itemsSrc string
	//go:embed lua/spend.lua
	spendSrc string
	//go:embed lua/series.lua
	seriesSrc string
	//go:embed lua/journal_lib.lua
	journalLibSrc string
	//go:embed lua/line_lib.lua
	lineLibSrc string
	//go:embed lua/line.lua
	lineSrc string
	//go:embed lua/detach.lua
	detachSrc string
	//go:embed lua/away_lib.lua
	awayLibSrc string
	//go:embed lua/move.lua
	moveSrc string
	//go:embed lua/address.lua
	addressSrc string
	//go:embed lua/address_lib.lua
	addressLibSrc string
	//go:embed lua/mails.lua
	mailsSrc string
	//go:embed lua/arrive.lua
	arriveSrc string
	//go:embed lua/order_lib.lua
	orderLibSrc string
	//go:embed lua/draw_freeze.lua
	drawFreezeSrc string
	//go:embed lua/draw_make.lua
	drawMakeSrc string
	//go:embed lua/draw_mark.lua
	drawMarkSrc string

	// admissionStep is the admission step: the admission keys, the hold
	// library (admit() ends a expired holder's holds), the adaptive
	// controller and admit(), one copy that every script that admits
	// (tick, ingest, release) is run behind.
	admissionStep = admissionKeysSrc + journalLibSrc + holdLibSrc + adaptiveSrc + awayLibSrc + orderLibSrc + admissionSrc

	ingestScript       = newScript(admissionStep, bulkLibSrc, marksLibSrc, ingestSrc)
	deleteEventScript  = newScript(deleteEventSrc)
	tickScript         = newScript(admissionStep, tickSrc)
	releaseScript      = newScript(admissionStep, releaseSrc)
	statusScript       = newScript(lineLibSrc, journalLibSrc, statusSrc)
	lineScript         = newScript(lineLibSrc, journalLibSrc, lineSrc)
	detachScript       = newScript(journalLibSrc, detachSrc)
	sweepScript        = newScript(journalLibSrc, sweepSrc)
	healthScript       = newScript(healthSrc)
	markRecordedScript = newScript(markRecordedSrc)
	holdScript         = newScript(holdLibSrc, holdSrc)
	unholdScript       = newScript(holdLibSrc, unholdSrc)
	confirmScript      = newScript(holdLibSrc, confirmSrc)
	unsellScript       = newScript(holdLibSrc, unsellSrc)
	itemScript         = newScript(holdLibSrc, itemSrc)
	itemsScript        = newScript(holdLibSrc, itemsSrc)
	spendScript        = newScript(spendSrc)
	moveScript         = newScript(journalLibSrc, moveSrc)
	addressScript      = newScript(addressLibSrc, addressSrc)
	mailsScript        = newScript(addressLibSrc, mailsSrc)
	arriveScript       = newScript(arriveSrc)
	drawFreezeScript   = newScript(drawFreezeSrc)
	drawMakeScript     = newScript(journalLibSrc, drawMakeSrc)
	drawMarkScript     = newScript(drawMarkSrc)
	// seriesScript reads the reports through adaptive.lua's signal().
	seriesScript = newScript(admissionKeysSrc, adaptiveSrc, seriesSrc)

	allScripts = []*redis.Script{ingestScript, deleteEventScript, tickScript, releaseScript, statusScript, sweepScript, healthScript, markRecordedScript, holdScript, unholdScript, confirmScript, unsellScript, itemScript, itemsScript, spendScript, seriesScript, lineScript, detachScript, moveScript, addressScript, mailsScript, arriveScript, drawFreezeScript, drawMakeScript, drawMarkScript}
)

// newScript is the script made of parts, behind the named numbers of
// codes.go (codesPrelude).
func newScript(parts ...string) *redis.Script {
	return redis.NewScript(codesPrelude + strings.Join(parts, ""))
}

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

// scriptCall is one script run of a pipeline.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
}

// pipeline runs calls in one round trip (on a cluster, one per master
// concerned, go-redis following MOVED and ASK per call). Calls the server
// did not know the script of (a restarted Redis, a node new to the cluster)
// are run again, alone, once the scripts are loaded everywhere: the others
// are not repeated.
func (s *Store) pipeline(ctx context.Context, calls []scriptCall) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	run := func(idx []int) error {
		_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range idx {
				c := calls[i]
				cmds[i] = c.script.EvalSha(ctx, p, c.keys, c.args...)
			}
			return nil
		})
		return err
	}
	all := make([]int, len(calls))
	for i := range all {
		all[i] = i
	}
	err := run(all)
	if !isNoScript(err) {
		return cmds, err
	}
	var again []int
	for i, cmd := range cmds {
		if isNoScript(cmd.Err()) {
			again = append(again, i)
		}
	}
	if err := loadScripts(ctx, s.c); err != nil {
		return nil, err
	}
	if err := run(again); err != nil {
		return cmds, err
	}
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return cmds, err
		}
	}
	return cmds, nil
}

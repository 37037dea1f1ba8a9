package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/stack/svcproc"
)

// The event of cost's join measurements and its topics' prefix, which
// ingest-consumer does not read: the ingest measurements use benchEvent,
// pre-filled, under the default prefix.
const (
	costJoinEvent  = "costjoins"
	costJoinPrefix = "cost.joins."
)

// joins measures producer-api and the producer baseline, cfg.rounds times
// each, alternating, the baseline first in each round.
func (cs *costStack) joins(ctx context.Context, cfg costConfig) ([]costPair, error) {
	token := stack.RandomHex(16)
	prod, _, err := cs.startChild(ctx, cs.bin("producer-api"), nil, "", map[string]string{
		"WAITQ_ADMIN_TOKEN": token, "WAITQ_TICKET_SECRET": stack.RandomHex(32), "WAITQ_LOG_LEVEL": "warn",
		"WAITQ_TRUST_USER_HEADER": "true", "WAITQ_TRUSTED_PROXIES": loopbackProxies, "WAITQ_TOPIC_PREFIX": costJoinPrefix,
	}, false)
	if err != nil {
		return nil, err
	}
	defer cs.stopChild(prod)
	if err := createEvent(ctx, prod.URL(), token, costJoinEvent, fmt.Sprintf(`{"capacity":100,"partitions":%d}`, benchPartitions)); err != nil {
		return nil, err
	}
	base, _, err := cs.startChild(ctx, cs.self, []string{"baseline", "producer"}, "", nil, false)
	if err != nil {
		return nil, err
	}
	defer cs.stopChild(base)
	lc := newLoadClient(cfg.concurrency)
	defer lc.Close()
	path := "/v1/events/" + costJoinEvent + "/queue"
	run := stack.RandomHex(3)
	pairs := make([]costPair, cfg.rounds)
	for i := range pairs {
		prefix := run + strconv.Itoa(i)
		if pairs[i].base, err = cs.measureJoins(ctx, lc, cfg, target{"baseline", base.URL() + path}, base, "b"+prefix); err != nil {
			return nil, err
		}
		if pairs[i].prog, err = cs.measureJoins(ctx, lc, cfg, target{"producer-api", prod.URL() + path}, prod, "p"+prefix); err != nil {
			return nil, err
		}
	}
	return pairs, deleteStatusesEvent(cs.store, costJoinEvent)
}

// measureJoins sends t cfg.joins/10 joins as a warm-up, then cfg.joins
// joins from cfg.concurrency clients, and returns the CPU p took over them.
func (cs *costStack) measureJoins(ctx context.Context, lc *loadClient, cfg costConfig, t target, p *svcproc.Proc, prefix string) (costSample, error) {
	lc.Close()
	ph := phase{label: t.name + " warm-up", prefix: prefix + "w", duration: cfg.timeout, maxReqs: int64(max(cfg.joins/10, 1)), workers: cfg.concurrency}
	if _, err := measure(ctx, lc, t, ph, costJoinsOf(lc, cfg, t.url, ph.prefix), cs.stderr); err != nil {
		return costSample{}, err
	}
	m0, err := cs.mark(ctx, p.Pid())
	if err != nil {
		return costSample{}, err
	}
	ph = phase{label: t.name, prefix: prefix + "m", duration: cfg.timeout, maxReqs: int64(cfg.joins), workers: cfg.concurrency}
	r, err := measure(ctx, lc, t, ph, costJoinsOf(lc, cfg, t.url, ph.prefix), cs.stderr)
	if err != nil {
		return costSample{}, err
	}
	m1, err := cs.mark(ctx, p.Pid())
	if err != nil {
		return costSample{}, err
	}
	r.errs.print(cs.stderr, "  "+t.name+" errors  ")
	if r.ok == 0 {
		return costSample{}, fmt.Errorf("%s: no join answered 202", t.name)
	}
	s := m1.since(m0, r.ok)
	s.p99, s.rate = r.lat.Percentile(0.99), r.rate()
	return s, nil
}

// costJoinsOf is joinsOf with each join's Idempotency-Key, as the waiting
// room page sends it, unless -join-keys=false.
func costJoinsOf(lc *loadClient, cfg costConfig, url, prefix string) request {
	if !cfg.joinKeys {
		return joinsOf(lc, url, prefix)
	}
	return func(ctx context.Context, w *worker, n int) (string, string) {
		user := userOf(prefix, w, n)
		return send(ctx, lc.http, http.MethodPost, url, http.StatusAccepted, "X-User-Id", user, "Idempotency-Key", stack.RandomHex(16))
	}
}

// ingest pre-fills the bench event's topic with cfg.joins joins and
// measures ingest-consumer and the ingest baseline reading all of it into
// the line, cfg.rounds times each, alternating; then ingest-consumer once
// more with the fast track on, the event full.
func (cs *costStack) ingest(ctx context.Context, cfg costConfig) (pairs []costPair, fast costSample, err error) {
	conn := kafkajoin.BrokerConfig{Brokers: cs.Brokers(), TopicPrefix: kafkajoin.DefaultTopicPrefix}
	if _, err := prefill(ctx, cs.store, conn, cfg.joins, cfg.joinKeys, time.Now().UnixMilli(), cfg.timeout, cs.stderr); err != nil {
		return nil, fast, err
	}
	consumer := cs.bin("ingest-consumer")
	pairs = make([]costPair, cfg.rounds)
	for i := range pairs {
		round := strconv.Itoa(i)
		if pairs[i].base, err = cs.measureIngest(ctx, cfg, "cost-baseline-"+round, false, cs.self, "baseline", "ingest"); err != nil {
			return nil, fast, err
		}
		if pairs[i].prog, err = cs.measureIngest(ctx, cfg, "cost-ingest-"+round, false, consumer); err != nil {
			return nil, fast, err
		}
	}
	fast, err = cs.measureIngest(ctx, cfg, "cost-fast-track", true, consumer)
	return pairs, fast, err
}

// measureIngest empties the bench event's line, starts bin with args as a
// member of group, and returns the CPU it took per join from the first join
// seen in the line until the whole pre-filled topic was there: its start
// (the runtime, the group's join) is not counted.
func (cs *costStack) measureIngest(ctx context.Context, cfg costConfig, group string, fastTrack bool, bin string, args ...string) (costSample, error) {
	if err := clearLine(ctx, cs.client); err != nil {
		return costSample{}, err
	}
	if err := cs.client.ConfigResetStat(ctx).Err(); err != nil {
		return costSample{}, fmt.Errorf("reset the command statistics: %w", err)
	}
	p, _, err := cs.startChild(ctx, bin, args, "", map[string]string{"WAITQ_GROUP_ID": group, "WAITQ_MAX_BATCH": strconv.Itoa(cfg.maxBatch),
		"WAITQ_FAST_TRACK": strconv.FormatBool(fastTrack), "WAITQ_DISCOVERY_INTERVAL": "100ms", "WAITQ_LOG_LEVEL": "warn"}, false)
	if err != nil {
		return costSample{}, err
	}
	defer cs.stopChild(p)
	var m0 cpuMark
	var markErr error
	res, err := pollLine(ctx, cs.client, cfg.joins, cfg.timeout, p.Exited(), func() { m0, markErr = cs.mark(ctx, p.Pid()) }, cs.stderr)
	if err != nil {
		return costSample{}, fmt.Errorf("%s: %w", bin, err)
	}
	m1, err := cs.mark(ctx, p.Pid())
	if err = cmp.Or(markErr, err); err != nil {
		return costSample{}, err
	}
	n := cfg.joins - int(res.atFirst)
	s := m1.since(m0, n)
	if s.cmds, err = commandTimes(ctx, cs.client); err != nil {
		return costSample{}, err
	}
	if n < cfg.joins/2 {
		fmt.Fprintf(cs.stderr, "  %s: %d of %d joins were in the line at the first look: measured over %d only (raise -joins)\n", filepath.Base(bin), res.atFirst, cfg.joins, n)
	}
	return s, nil
}

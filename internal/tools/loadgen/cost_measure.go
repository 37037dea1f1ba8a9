package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/stack/svcproc"
	"github.com/waitq/waitq/internal/tools/loadgen/procstat"
)

// costPrograms are the binaries cost runs, by their cmd/ directory.
var costPrograms = []string{"producer-api", "ingest-consumer", "kfake-broker"}

// costStack is what cost runs on: redis-server and the kfake broker, each a
// process of its own, and the binaries it measures.
type costStack struct {
	*infra
	store *redisstore.Store // on the one redis-server, the fast track off
	dir   string            // of the programs' binaries
	built bool              // dir was made for binaries built here: removed at close
	self  string            // this binary: "loadgen baseline …"
}

// startCostStack builds (or finds) the binaries and starts redis-server
// and the broker; on error nothing is left running.
func startCostStack(ctx context.Context, cfg costConfig, stderr io.Writer) (_ *costStack, err error) {
	cs := &costStack{dir: cfg.binDir}
	defer func() {
		if err != nil {
			cs.close()
		}
	}()
	if cs.self, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("find loadgen's own binary: %w", err)
	}
	if cs.dir == "" {
		if cs.dir, err = os.MkdirTemp("", "loadgen-cost-"); err != nil {
			return nil, err
		}
		cs.built = true
		if err := buildPrograms(ctx, cs.dir, stderr); err != nil {
			return nil, err
		}
	}
	for _, p := range costPrograms {
		if _, err := os.Stat(cs.bin(p)); err != nil {
			return nil, fmt.Errorf("-bin-dir: %w", err)
		}
	}
	if cs.infra, err = startStack(ctx, stackSpec{brokerBin: cs.bin("kfake-broker")}, stderr); err != nil {
		return nil, err
	}
	cs.store, err = redisstore.New(cs.client, redisstore.Options{})
	return cs, err
}

// bin returns the binary of program p.
func (cs *costStack) bin(p string) string { return filepath.Join(cs.dir, p) }

// buildPrograms builds costPrograms from the checkout in the working
// directory into dir.
func buildPrograms(ctx context.Context, dir string, stderr io.Writer) error {
	args := []string{"build", "-o", dir}
	for _, p := range costPrograms {
		args = append(args, "github.com/waitq/waitq/cmd/"+p)
	}
	fmt.Fprintf(stderr, "  go %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build (run loadgen cost inside the module, or give -bin-dir): %w", err)
	}
	return nil
}

// close stops the broker and Redis and removes the binaries built.
func (cs *costStack) close() {
	if cs.infra != nil {
		cs.infra.close()
	}
	if cs.built {
		_ = os.RemoveAll(cs.dir)
	}
}

// cpuMark is the CPU time of a measured program, the broker and Redis.
type cpuMark struct{ prog, broker, redis time.Duration }

// mark reads the CPU time of process pid, the broker and Redis.
func (cs *costStack) mark(ctx context.Context, pid int) (m cpuMark, err error) {
	if m.prog, err = procstat.CPU(pid); err != nil {
		return m, err
	}
	if m.broker, err = procstat.CPU(cs.broker.Pid()); err != nil {
		return m, err
	}
	m.redis, err = serverCPU(ctx, cs.client)
	return m, err
}

// since returns the sample of joins joins from m0 to m.
func (m cpuMark) since(m0 cpuMark, joins int) costSample {
	return costSample{joins: joins, cpuMark: cpuMark{m.prog - m0.prog, m.broker - m0.broker, m.redis - m0.redis}}
}

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
	pairs := make([]costPair, cfg.rounds) // users b0…, p0…: each run has a broker and Redis of its own
	for i := range pairs {
		prefix := strconv.Itoa(i)
		if pairs[i].base, err = cs.measureJoins(ctx, lc, cfg, target{"baseline", base.URL() + path}, base, "b"+prefix); err != nil {
			return nil, err
		}
		if pairs[i].prog, err = cs.measureJoins(ctx, lc, cfg, target{"producer-api", prod.URL() + path}, prod, "p"+prefix); err != nil {
			return nil, err
		}
	}
	return pairs, deleteBenchEvent(cs.store, costJoinEvent)
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

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/stack/svcproc"
	"github.com/waitq/waitq/internal/tools/loadgen/procstat"
)

// costPrograms are the binaries cost runs, by their cmd/ directory.
var costPrograms = []string{"producer-api", "ingest-consumer", "kfake-broker"}

// costStack is what cost runs: redis-server and the kfake broker, each a
// process of its own, the binaries of the programs under measurement and
// loadgen's own binary, which runs the baselines.
type costStack struct {
	redis      *stack.Redis
	client     *redis.Client
	broker     *svcproc.Proc
	brokerAddr string            // the address the broker listens on
	bin        map[string]string // program → binary
	binDesc    string            // where the binaries came from, for the target line
	self       string            // this binary: "loadgen baseline …"
	tmp        string            // the directory of binaries built, removed at close
	stderr     io.Writer
}

// startCostStack builds (or finds) the binaries and starts redis-server
// and the broker; on error nothing is left running.
func startCostStack(ctx context.Context, cfg costConfig, stderr io.Writer) (_ *costStack, err error) {
	cs := &costStack{stderr: stderr, bin: map[string]string{}}
	defer func() {
		if err != nil {
			cs.close()
		}
	}()
	if cs.self, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("find loadgen's own binary: %w", err)
	}
	dir := cfg.binDir
	if dir == "" {
		if cs.tmp, err = os.MkdirTemp("", "loadgen-cost-"); err != nil {
			return nil, err
		}
		dir = cs.tmp
		if err := buildPrograms(ctx, dir, stderr); err != nil {
			return nil, err
		}
	}
	cs.binDesc = "binaries in " + dir
	for _, p := range costPrograms {
		cs.bin[p] = filepath.Join(dir, p)
		if _, err := os.Stat(cs.bin[p]); err != nil {
			return nil, fmt.Errorf("-bin-dir: %w", err)
		}
	}
	if cs.redis, err = stack.StartRedis(ctx, stack.RedisOptions{}); err != nil {
		return nil, err
	}
	uc, err := cs.redis.Conn().Client()
	if err != nil {
		return nil, err
	}
	var ok bool
	if cs.client, ok = uc.(*redis.Client); !ok { // one redis-server: a plain client
		_ = uc.Close()
		return nil, fmt.Errorf("cost: a %T for one redis-server", uc)
	}
	addr, err := svcproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	cs.broker, err = cs.startOn(ctx, addr, cs.bin["kfake-broker"], nil, map[string]string{"WAITQ_BROKER_ADDR": addr})
	cs.brokerAddr = addr
	return cs, err
}

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

// env is the environment of the children besides loadgen's own (without
// its WAITQ_ variables): the broker, once started, Redis, warn logs, no
// per-client rate limit, and own on top.
func (cs *costStack) env(own map[string]string) map[string]string {
	m := map[string]string{"WAITQ_LOG_LEVEL": "warn", "WAITQ_RATE": "0"}
	if cs.broker != nil {
		m["WAITQ_KAFKA_BROKERS"] = cs.brokerAddr
	}
	maps.Copy(m, cs.redis.Env())
	maps.Copy(m, own)
	return m
}

// start runs bin with args and the children's environment, own on top, and
// waits until its /readyz answers.
func (cs *costStack) start(ctx context.Context, bin string, args []string, own map[string]string) (*svcproc.Proc, error) {
	return cs.startOn(ctx, "", bin, args, own)
}

// startOn is start of a program that serves no HTTP and listens on lsn
// (svcproc.Options.ListenAddr), or of one that does when lsn is "".
func (cs *costStack) startOn(ctx context.Context, lsn, bin string, args []string, own map[string]string) (*svcproc.Proc, error) {
	env, _ := childEnv(cs.env(own), false)
	p, err := svcproc.Start(ctx, bin, svcproc.Options{Args: args, ListenAddr: lsn, Env: env, Echo: cs.stderr, OutputLimit: 64 << 10})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// stop ends p, reporting one that had to be killed.
func (cs *costStack) stop(p *svcproc.Proc) {
	if err := p.Stop(10 * time.Second); errors.Is(err, svcproc.ErrNotStopped) {
		fmt.Fprintf(cs.stderr, "loadgen: %v\n", err)
	}
}

// close stops the broker and Redis and removes the binaries built.
func (cs *costStack) close() {
	if cs.broker != nil {
		cs.stop(cs.broker)
	}
	if cs.client != nil {
		_ = cs.client.Close()
	}
	if cs.redis != nil {
		cs.redis.Close()
	}
	if cs.tmp != "" {
		_ = os.RemoveAll(cs.tmp)
	}
}

// redisVersion asks the redis-server for its version; "?" when it cannot.
func (cs *costStack) redisVersion(ctx context.Context) string {
	info, err := redisInfo(ctx, cs.client, "server")
	if v, ok := info["redis_version"]; err == nil && ok {
		return v
	}
	return "?"
}

// cpuMark is the CPU time a measured program, the broker and Redis had
// used at one moment.
type cpuMark struct{ prog, broker, redis time.Duration }

// mark reads the CPU time of process pid, the broker and Redis.
func (cs *costStack) mark(ctx context.Context, pid int) (cpuMark, error) {
	var m cpuMark
	var err error
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
	return costSample{joins: joins, prog: m.prog - m0.prog, broker: m.broker - m0.broker, rcpu: m.redis - m0.redis}
}

// commandTimes returns the server's time in each command since its
// statistics were last reset (INFO commandstats, which counts the commands
// a script calls as well as the script's own call, that time included).
func (cs *costStack) commandTimes(ctx context.Context) (map[string]time.Duration, error) {
	info, err := redisInfo(ctx, cs.client, "commandstats")
	if err != nil {
		return nil, err
	}
	times := map[string]time.Duration{}
	for k, v := range info {
		cmd, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		for _, f := range strings.Split(v, ",") {
			if us, ok := strings.CutPrefix(f, "usec="); ok {
				n, err := strconv.ParseInt(us, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("commandstats %s: %w", k, err)
				}
				times[cmd] = time.Duration(n) * time.Microsecond
			}
		}
	}
	return times, nil
}

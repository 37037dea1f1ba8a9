package loadgen

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack/svcproc"
	"github.com/waitq/waitq/internal/tools/loadgen/procstat"
)

// costPrograms are the binaries cost runs, by their cmd/ directory.
var costPrograms = []string{"producer-api", "ingest-consumer", "kfake-broker"}

// costStack is what cost runs: redis-server and the kfake broker, each a
// process of its own, the binaries of the programs under measurement and
// loadgen's own binary, which runs the baselines.
type costStack struct {
	*infra
	store   *redisstore.Store // on the one redis-server, the fast track off
	bin     map[string]string // program → binary
	binDesc string            // where the binaries came from, for the target line
	self    string            // this binary: "loadgen baseline …"
	tmp     string            // the directory of binaries built, removed at close
}

// startCostStack builds (or finds) the binaries and starts redis-server
// and the broker; on error nothing is left running.
func startCostStack(ctx context.Context, cfg costConfig, stderr io.Writer) (_ *costStack, err error) {
	cs := &costStack{bin: map[string]string{}}
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
	if cs.infra, err = startStack(ctx, stackSpec{brokerBin: cs.bin["kfake-broker"]}, stderr); err != nil {
		return nil, err
	}
	cs.store, err = redisstore.New(cs.client, redisstore.Options{})
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

// start runs bin with args as a child process, warn logs and own on top
// of the services' environment (without loadgen's WAITQ_ variables), and
// waits until its /readyz answers.
func (cs *costStack) start(ctx context.Context, bin string, args []string, own map[string]string) (*svcproc.Proc, error) {
	env := map[string]string{"WAITQ_LOG_LEVEL": "warn"}
	maps.Copy(env, own)
	p, _, err := cs.startChild(ctx, bin, args, "", env, false)
	return p, err
}

// close stops the broker and Redis and removes the binaries built.
func (cs *costStack) close() {
	if cs.infra != nil {
		cs.infra.close()
	}
	if cs.tmp != "" {
		_ = os.RemoveAll(cs.tmp)
	}
}

// cpuMark is the CPU time a measured program, the broker and Redis had
// used at one moment, or took between two.
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
	m.redis, err = redisServerCPU(ctx, cs.client)
	return m, err
}

// since returns the sample of joins joins from m0 to m.
func (m cpuMark) since(m0 cpuMark, joins int) costSample {
	return costSample{joins: joins, cpuMark: cpuMark{m.prog - m0.prog, m.broker - m0.broker, m.redis - m0.redis}}
}

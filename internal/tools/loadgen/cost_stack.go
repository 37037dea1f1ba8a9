package loadgen

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/tools/loadgen/procstat"
)

// costPrograms are the binaries cost runs, by their cmd/ directory.
var costPrograms = []string{"producer-api", "ingest-consumer", "kfake-broker"}

// costStack is what cost runs: redis-server and the kfake broker, each a
// process of its own, the binaries of the programs under measurement and
// loadgen's own binary, which runs the baselines.
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

// cpuMark is the CPU time a measured program, the broker and Redis had
// used at one moment, or took between two.
type cpuMark struct{ prog, broker, redis time.Duration }

// mark reads the CPU time of process pid, the broker and Redis.
func (cs *costStack) mark(ctx context.Context, pid int) (m cpuMark, err error) {
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

package svcproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/waitq/waitq/internal/stack/promtext"
)

// ErrNotStopped is wrapped by Stop's error when the process outlived its
// limit after SIGTERM and was killed.
var ErrNotStopped = errors.New("did not stop")

// DefaultReadyLimit is how long Start and Restart wait for /readyz unless
// Options say otherwise.
const DefaultReadyLimit = 30 * time.Second

// Options configure a Proc.
type Options struct {
	// Args are the binary's arguments (none when empty).
	Args []string
	// Env is the process's whole environment as KEY=VALUE. Start adds
	// AddrVar, a free loopback address, which wins over one in Env.
	Env []string
	// Echo, when set, also receives the process's output as it comes, as
	// much of it as is kept.
	Echo io.Writer
	// OutputLimit bounds the bytes of output kept (and echoed) over all the
	// process's runs; the rest is counted by Discarded. 0: no bound.
	OutputLimit int
	// ListenAddr, for a program that serves no HTTP (the kfake broker), is
	// the address it listens on: it is ready once that takes a TCP
	// connection, instead of once its /readyz answers 200.
	ListenAddr string
	// ReadyLimit bounds the wait for /readyz at each start
	// (DefaultReadyLimit when 0).
	ReadyLimit time.Duration
}

// Proc is a built waitq service binary running as a child process on a
// loopback address of its own, in a process group of its own so that a
// terminal's Ctrl-C reaches only its owner. Its stdout and stderr are
// captured together. Its methods are safe for concurrent use.
type Proc struct {
	path  string
	args  []string
	lsn   string // Options.ListenAddr
	name  string // base name of path, for errors
	env   []string
	addr  string
	limit time.Duration
	out   *output
	http  *http.Client // for Metrics

	mu   sync.Mutex
	cur  *run // the running process; nil once Stop or Kill took it
	last *run // the latest run, also after it ended
}

// run is one start of the binary.
type run struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process was waited for
	err    error         // its exit error, set before exited is closed
}

// Start runs the binary at path with opts and waits until its /readyz
// answers 200; on error nothing is left running.
func Start(ctx context.Context, path string, opts Options) (*Proc, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	p := &Proc{
		path:  path,
		args:  opts.Args,
		lsn:   opts.ListenAddr,
		name:  filepath.Base(path),
		env:   append(slices.Clip(opts.Env), AddrVar+"="+addr),
		addr:  addr,
		limit: opts.ReadyLimit,
		out:   &output{echo: opts.Echo, limit: opts.OutputLimit},
		http:  &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}},
	}
	if p.limit <= 0 {
		p.limit = DefaultReadyLimit
	}
	if err := p.Restart(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Restart starts the binary again, after Stop, Kill or its own exit, with
// the same environment and address, and waits until its /readyz answers
// 200; on error it is killed. ctx bounds only the wait.
func (p *Proc) Restart(ctx context.Context) error {
	p.mu.Lock()
	if p.cur != nil && !p.cur.ended() {
		p.mu.Unlock()
		return fmt.Errorf("svcproc: restart of %s, which is running", p.name)
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		return fmt.Errorf("svcproc: start %s: %w", p.path, err)
	}
	r := &run{cmd: cmd, exited: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.exited)
	}()
	p.cur, p.last = r, r
	p.mu.Unlock()
	wait := func() error { return WaitReady(ctx, p.URL()+"/readyz", r.exited, p.limit) }
	if p.lsn != "" {
		wait = func() error { return waitListening(ctx, p.lsn, r.exited, p.limit) }
	}
	if err := wait(); err != nil {
		p.Kill()
		return fmt.Errorf("svcproc: %s: %w", p.name, err)
	}
	return nil
}

// Addr returns the host:port the process listens on.
func (p *Proc) Addr() string { return p.addr }

// URL returns the process's base URL, http://host:port.
func (p *Proc) URL() string { return "http://" + p.addr }

// Pid returns the process id of the latest run.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last.cmd.Process.Pid
}

// Exited returns a channel closed once the latest run has ended.
func (p *Proc) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last.exited
}

// Running reports whether the latest run is still going.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.last.ended()
}

// Stop ends the process gracefully: SIGTERM, then the wait for its exit. It
// returns the exit error (nil for status 0). A process still running limit
// after SIGTERM is killed, and the error wraps ErrNotStopped. Stop of a
// process already stopped or killed returns nil.
func (p *Proc) Stop(limit time.Duration) error {
	r := p.take()
	if r == nil {
		return nil
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-r.exited:
		return r.err
	case <-t.C:
	}
	_ = r.cmd.Process.Kill()
	<-r.exited
	return fmt.Errorf("svcproc: %s %w within %s of SIGTERM; killed it", p.name, ErrNotStopped, limit)
}

// Kill ends the process with SIGKILL, so no shutdown code runs, and waits
// for its exit.
func (p *Proc) Kill() {
	if r := p.take(); r != nil {
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

// take hands the running process to one caller of Stop or Kill.
func (p *Proc) take() *run {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.cur
	p.cur = nil
	p.http.CloseIdleConnections()
	return r
}

// Output returns what the process printed over all its runs, as much as is
// kept.
func (p *Proc) Output() string { return p.out.String() }

// Discarded returns the bytes of output past Options.OutputLimit, neither kept
// nor echoed.
func (p *Proc) Discarded() int { return p.out.Discarded() }

// Metrics reads the unlabelled samples of the process's /metrics.
func (p *Proc) Metrics(ctx context.Context) (map[string]float64, error) {
	m, err := promtext.Scrape(ctx, p.http, p.URL()+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("svcproc: %s metrics: %w", p.name, err)
	}
	return m, nil
}

// ended reports whether r's process has been waited for.
func (r *run) ended() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

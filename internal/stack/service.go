package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/stack/svcproc"
)

// ErrNotStopped is wrapped by Task.Stop's error when the task outlived its
// limit (the same error as svcproc's for a child process).
var ErrNotStopped = svcproc.ErrNotStopped

// Limits of StartService.
const (
	// ReadyLimit bounds the wait for a service's readiness.
	ReadyLimit = 30 * time.Second
	// StopLimit bounds the wait for a service to return once stopped.
	StopLimit = 15 * time.Second
	// shutdownTimeout is a service's WAITQ_SHUTDOWN_TIMEOUT unless its
	// settings name one.
	shutdownTimeout = "5s"
)

// Task is a function running in a goroutine of its own until its context
// ends: a service, or a consumer under measurement, in this process.
type Task struct {
	cancel context.CancelFunc
	exited chan struct{} // closed once the function returned
	err    error         // what it returned, set before exited is closed
}

// Go runs run in a new goroutine with a context that ends with ctx or with
// Stop.
func Go(ctx context.Context, run func(context.Context) error) *Task {
	ctx, cancel := context.WithCancel(ctx)
	t := &Task{cancel: cancel, exited: make(chan struct{})}
	go func() {
		defer close(t.exited)
		t.err = run(ctx)
	}()
	return t
}

// Exited returns a channel closed once the function returned.
func (t *Task) Exited() <-chan struct{} { return t.exited }

// Err returns what the function returned, once Exited is closed (nil
// before).
func (t *Task) Err() error {
	select {
	case <-t.exited:
		return t.err
	default:
		return nil
	}
}

// Stop ends the task's context and waits at most limit for its function to
// return. It returns what the function returned, or an error wrapping
// ErrNotStopped.
func (t *Task) Stop(limit time.Duration) error {
	t.cancel()
	select {
	case <-t.exited:
		return t.err
	case <-time.After(limit):
		return fmt.Errorf("%w within %s", ErrNotStopped, limit)
	}
}

// ServiceOptions configure StartService.
type ServiceOptions struct {
	// ReadyPath is the path that answers 200 once the service is ready
	// (empty: /readyz).
	ReadyPath string
	// Log receives the service's log (nil: discarded).
	Log *slog.Logger
}

// Service is a waitq service running in this process, started by
// StartService.
type Service struct {
	*Task
	name, addr string
}

// StartService runs svc in this process (app.RunWithEnv) with the settings
// env, every other setting keeping its program's default, and waits at most
// ReadyLimit until its ReadyPath answers 200. It listens on env's
// WAITQ_HTTP_ADDR, or when env names none on a free loopback address, and
// shuts down within 5 s unless env's WAITQ_SHUTDOWN_TIMEOUT says
// otherwise. The service runs until ctx ends or Stop; on error it is
// stopped.
func StartService(ctx context.Context, svc app.Service, env map[string]string, o ServiceOptions) (*Service, error) {
	env = maps.Clone(env)
	if env == nil {
		env = map[string]string{}
	}
	if env[svcproc.AddrVar] == "" {
		addr, err := svcproc.FreeAddr()
		if err != nil {
			return nil, err
		}
		env[svcproc.AddrVar] = addr
	}
	if env["WAITQ_SHUTDOWN_TIMEOUT"] == "" {
		env["WAITQ_SHUTDOWN_TIMEOUT"] = shutdownTimeout
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{name: svc.Name(), addr: env[svcproc.AddrVar]}
	s.Task = Go(ctx, func(ctx context.Context) error { return app.RunWithEnv(ctx, svc, env, log) })
	readyPath := o.ReadyPath
	if readyPath == "" {
		readyPath = "/readyz"
	}
	if err := svcproc.WaitReady(ctx, s.URL()+readyPath, s.Exited(), ReadyLimit); err != nil {
		if serr := s.Stop(StopLimit); serr != nil {
			err = serr
		}
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	return s, nil
}

// Name returns the service's program name.
func (s *Service) Name() string { return s.name }

// Addr returns the host:port the service listens on.
func (s *Service) Addr() string { return s.addr }

// URL returns the service's base URL, http://host:port.
func (s *Service) URL() string { return "http://" + s.addr }

// Group is services started in this process with settings in common, and
// anything else to stop with them. Its methods are not safe for concurrent
// use.
type Group struct {
	// Env are the settings of every service of the group; a service's own
	// settings win.
	Env map[string]string
	// Log receives each service's log with its name as "component" (nil:
	// discarded).
	Log *slog.Logger

	services []*Service
	stop     []func() error
}

// Start runs svc with g's settings and env on top (StartService) and stops
// it at Close.
func (g *Group) Start(ctx context.Context, svc app.Service, env map[string]string, o ServiceOptions) (*Service, error) {
	all := maps.Clone(g.Env)
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, env)
	if o.Log == nil && g.Log != nil {
		o.Log = g.Log.With("component", svc.Name())
	}
	s, err := StartService(ctx, svc, all, o)
	if err != nil {
		return nil, err
	}
	g.services = append(g.services, s)
	g.stop = append(g.stop, func() error {
		if err := s.Stop(StopLimit); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		return nil
	})
	return s, nil
}

// AtClose adds f to what Close calls.
func (g *Group) AtClose(f func()) {
	g.stop = append(g.stop, func() error { f(); return nil })
}

// Close stops everything, the last started first, and returns the errors
// the services stopped with.
func (g *Group) Close() error {
	var errs []error
	for _, f := range slices.Backward(g.stop) {
		errs = append(errs, f())
	}
	g.stop, g.services = nil, nil
	return errors.Join(errs...)
}

// Wait waits until ctx ends or a service of the group returns, then
// stops the group (Close). It returns what the first service to return
// returned, and otherwise the errors of Close.
func (g *Group) Wait(ctx context.Context) error {
	exited := make(chan *Service, len(g.services))
	for _, s := range g.services {
		go func() {
			select {
			case <-s.Exited():
				exited <- s
			case <-ctx.Done():
			}
		}()
	}
	var first error
	select {
	case <-ctx.Done():
	case s := <-exited:
		first = s.Err()
		if first == nil {
			first = fmt.Errorf("%s stopped", s.name)
		} else {
			first = fmt.Errorf("%s: %w", s.name, first)
		}
	}
	if err := g.Close(); first == nil {
		return err
	}
	return first
}

// RandomHex returns 2n random hex characters, for generated tokens.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

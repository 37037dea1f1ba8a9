package loadgen

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errNotStopped is wrapped by task.stop's error when the task outlived its
// limit.
var errNotStopped = errors.New("did not stop")

// task is a function running in a goroutine of its own until its context
// ends: a service or a consumer under measurement in this process.
type task struct {
	cancel context.CancelFunc
	exited chan struct{} // closed once the function returned
	err    error         // what it returned, set before exited is closed
}

// startTask runs run in a new goroutine with a context that ends with ctx or
// with stop.
func startTask(ctx context.Context, run func(context.Context) error) *task {
	ctx, cancel := context.WithCancel(ctx)
	t := &task{cancel: cancel, exited: make(chan struct{})}
	go func() {
		defer close(t.exited)
		t.err = run(ctx)
	}()
	return t
}

// stop ends the task's context and waits at most limit for its function to
// return. It returns what the function returned, or an error wrapping
// errNotStopped.
func (t *task) stop(limit time.Duration) error {
	t.cancel()
	select {
	case <-t.exited:
		return t.err
	case <-time.After(limit):
		return fmt.Errorf("%w within %s", errNotStopped, limit)
	}
}

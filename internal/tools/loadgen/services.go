package loadgen

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/stack/svcproc"
)

// startProducer runs producer-api in this process against st and waits until
// its /readyz answers 200. An empty batchTimeout keeps the service default.
func startProducer(ctx context.Context, st *stack, batchTimeout, adminToken string, stderr io.Writer) (base string, stop func(), err error) {
	env := map[string]string{
		"WAITQ_KAFKA_BROKERS":       strings.Join(st.Brokers(), ","),
		"WAITQ_TICKET_SECRET":       app.RandomHex(32),
		"WAITQ_ADMIN_TOKEN":         adminToken,
		"WAITQ_KAFKA_BATCH_TIMEOUT": batchTimeout,
		"WAITQ_RATE":                "0", // one client address sends every join
	}
	maps.Copy(env, st.redisEnv())
	return startService(ctx, &app.Producer{}, env, stderr)
}

// startIngest runs ingest-consumer in this process against st, with the
// service's defaults (group, discovery interval, batch size), and waits until
// it is ready.
func startIngest(ctx context.Context, st *stack, stderr io.Writer) (stop func(), err error) {
	env := map[string]string{"WAITQ_KAFKA_BROKERS": strings.Join(st.Brokers(), ",")}
	maps.Copy(env, st.redisEnv())
	_, stop, err = startService(ctx, &app.Ingest{}, env, stderr)
	return stop, err
}

// services are what a measurement started in this process over a stack:
// services with the fast track as fast, and anything else it stops at the
// end, stopped in reverse order by close.
type services struct {
	st     *stack
	fast   bool
	stderr io.Writer
	stop   []func()
}

// start runs svc over st with extra settings on top (startService) and
// stops it at close; base is its URL.
func (s *services) start(ctx context.Context, svc app.Service, extra map[string]string) (base string, err error) {
	base, stop, err := startService(ctx, svc, s.st.serviceEnv(s.fast, extra), s.stderr)
	if err == nil {
		s.atClose(stop)
	}
	return base, err
}

// atClose adds f to what close calls.
func (s *services) atClose(f func()) { s.stop = append(s.stop, f) }

// close stops everything, the last started first.
func (s *services) close() {
	for _, f := range slices.Backward(s.stop) {
		f()
	}
}

// startService runs svc in this process with the settings env (plus a free
// loopback WAITQ_HTTP_ADDR and a 5 s shutdown), its logs going nowhere, and
// waits until its /readyz answers 200. stop ends it and waits at most 15 s
// for it to return.
func startService(ctx context.Context, svc app.Service, env map[string]string, stderr io.Writer) (base string, stop func(), err error) {
	addr, err := svcproc.FreeAddr()
	if err != nil {
		return "", nil, err
	}
	return startServiceOn(ctx, svc, addr, "/readyz", env, stderr)
}

// startServiceOn is startService on addr, ready when readyPath answers 200.
func startServiceOn(ctx context.Context, svc app.Service, addr, readyPath string, env map[string]string, stderr io.Writer) (base string, stop func(), err error) {
	env = maps.Clone(env)
	env[svcproc.AddrVar] = addr
	env["WAITQ_SHUTDOWN_TIMEOUT"] = "5s"
	t := startTask(ctx, func(ctx context.Context) error {
		return app.RunWithEnv(ctx, svc, env, slog.New(slog.DiscardHandler))
	})
	base = "http://" + addr
	if err := svcproc.WaitReady(ctx, base+readyPath, t.exited, 30*time.Second); err != nil {
		if serr := t.stop(15 * time.Second); serr != nil {
			err = serr
		}
		return "", nil, fmt.Errorf("%s: %w", svc.Name(), err)
	}
	stop = func() {
		if err := t.stop(15 * time.Second); err != nil {
			fmt.Fprintf(stderr, "loadgen: %s: %v\n", svc.Name(), err)
		}
	}
	return base, stop, nil
}

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/redisproc"
	"github.com/waitq/waitq/pkg/app"
)

// startProducer runs producer-api in this process against st and waits until
// its /readyz answers 200. An empty batchTimeout keeps the service default.
func startProducer(ctx context.Context, st *stack, batchTimeout, adminToken string, stderr io.Writer) (base string, stop func(), err error) {
	return startService(ctx, &app.Producer{}, map[string]string{
		"WAITQ_KAFKA_BROKERS":       strings.Join(st.Brokers(), ","),
		"WAITQ_REDIS_URL":           st.redis.URL(),
		"WAITQ_TICKET_SECRET":       app.RandomHex(32),
		"WAITQ_ADMIN_TOKEN":         adminToken,
		"WAITQ_KAFKA_BATCH_TIMEOUT": batchTimeout,
		"WAITQ_RATE":                "0", // one client address sends every join
	}, stderr)
}

// startIngest runs ingest-consumer in this process against st, with the
// service's defaults (group, discovery interval, batch size), and waits until
// it is ready.
func startIngest(ctx context.Context, st *stack, stderr io.Writer) (stop func(), err error) {
	_, stop, err = startService(ctx, &app.Ingest{}, map[string]string{
		"WAITQ_KAFKA_BROKERS": strings.Join(st.Brokers(), ","),
		"WAITQ_REDIS_URL":     st.redis.URL(),
	}, stderr)
	return stop, err
}

// startService runs svc in this process with the settings env (plus a free
// loopback WAITQ_HTTP_ADDR, error-level logs to nowhere and a 5 s shutdown)
// and waits until its /readyz answers 200. stop ends it and waits at most
// 15 s for it to return.
func startService(ctx context.Context, svc app.Service, env map[string]string, stderr io.Writer) (base string, stop func(), err error) {
	port, err := redisproc.FreePort()
	if err != nil {
		return "", nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	env = maps.Clone(env)
	env["WAITQ_HTTP_ADDR"] = addr
	env["WAITQ_LOG_LEVEL"] = "error"
	env["WAITQ_SHUTDOWN_TIMEOUT"] = "5s"
	pctx, cancel := context.WithCancel(ctx)
	exited := make(chan struct{})
	var runErr error
	go func() {
		defer close(exited)
		runErr = app.Run(pctx, svc, nil, func(k string) string { return env[k] }, io.Discard)
	}()
	shutdown := func() error {
		cancel()
		select {
		case <-exited:
			return runErr
		case <-time.After(15 * time.Second):
			return errors.New("did not stop within 15s")
		}
	}
	base = "http://" + addr
	if err := waitReady(ctx, base+"/readyz", exited, 30*time.Second); err != nil {
		if serr := shutdown(); serr != nil {
			err = serr
		}
		return "", nil, fmt.Errorf("%s: %w", svc.Name(), err)
	}
	stop = func() {
		if err := shutdown(); err != nil {
			fmt.Fprintf(stderr, "loadgen: %s: %v\n", svc.Name(), err)
		}
	}
	return base, stop, nil
}

// waitReady polls url until it answers 200, the service exits, ctx ends or
// limit passes.
func waitReady(ctx context.Context, url string, exited <-chan struct{}, limit time.Duration) error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(limit)
	last := "no answer yet"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := c.Do(req); err != nil {
			last = err.Error()
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		}
		select {
		case <-exited:
			return errors.New("stopped before it was ready")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %s (last: %s)", url, limit, last)
		}
	}
}

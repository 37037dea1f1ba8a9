package loadgen

import (
	"context"
	"fmt"
	"io"
	"maps"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/stack"
)

// loopbackProxies are the trusted proxies of a service in trust mode:
// loadgen, on this machine, stands where the authenticating proxy would.
const loopbackProxies = "127.0.0.1,::1"

// startProducer runs producer-api in this process against st and waits until
// its /readyz answers 200. An empty batchTimeout keeps the service default.
// It trusts X-User-Id (loadgen names its users, as a proxy would) unless
// extra says otherwise; extra goes on top.
func startProducer(ctx context.Context, st *infra, batchTimeout, adminToken string, extra map[string]string, stderr io.Writer) (base string, stop func(), err error) {
	env := map[string]string{
		"WAITQ_TICKET_SECRET":       stack.RandomHex(32),
		"WAITQ_ADMIN_TOKEN":         adminToken,
		"WAITQ_KAFKA_BATCH_TIMEOUT": batchTimeout,
		"WAITQ_TRUST_USER_HEADER":   "true",
		"WAITQ_TRUSTED_PROXIES":     loopbackProxies,
	}
	maps.Copy(env, extra)
	s, err := stack.StartService(ctx, &app.Producer{}, st.serviceEnv(true, env), stack.ServiceOptions{})
	if err != nil {
		return "", nil, err
	}
	return s.URL(), stopper(s, stderr), nil
}

// producerOnInfra is producer-api in this process over an infra of its
// own, with a fresh admin token.
type producerOnInfra struct {
	st          *infra
	base, token string
	stop        func()
}

// startProducerOnInfra starts the broker and Redis (startInfra) and
// producer-api on them (startProducer, extra on top); stop stops both.
func startProducerOnInfra(ctx context.Context, extra map[string]string, stderr io.Writer) (*producerOnInfra, error) {
	st, err := startInfra(ctx, false)
	if err != nil {
		return nil, err
	}
	token := stack.RandomHex(16)
	base, stop, err := startProducer(ctx, st, "", token, extra, stderr)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &producerOnInfra{st: st, base: base, token: token, stop: func() { stop(); st.Close() }}, nil
}

// startIngest runs ingest-consumer in this process against st, with the
// service's defaults (group, discovery interval, batch size, the fast
// track), and waits until it is ready.
func startIngest(ctx context.Context, st *infra, stderr io.Writer) (stop func(), err error) {
	s, err := stack.StartService(ctx, &app.Ingest{}, st.serviceEnv(true, nil), stack.ServiceOptions{})
	if err != nil {
		return nil, err
	}
	return stopper(s, stderr), nil
}

// stopper returns what stops s, reporting to stderr when it does not stop
// well.
func stopper(s *stack.Service, stderr io.Writer) func() {
	return func() {
		if err := s.Stop(stack.StopLimit); err != nil {
			fmt.Fprintf(stderr, "loadgen: %s: %v\n", s.Name(), err)
		}
	}
}

// services are what a measurement started in this process over an infra
// (stack.Group): services with the fast track as given, and anything else
// it stops at the end, stopped in reverse order by close.
type services struct {
	stack.Group
	stderr io.Writer
}

// newServices returns the services of a measurement over st with the fast
// track as fast.
func newServices(st *infra, fast bool, stderr io.Writer) services {
	return services{Group: stack.Group{Env: st.serviceEnv(fast, nil)}, stderr: stderr}
}

// start runs svc with extra settings on top and stops it at close; base is
// its URL.
func (s *services) start(ctx context.Context, svc app.Service, extra map[string]string) (base string, err error) {
	r, err := s.Start(ctx, svc, extra, stack.ServiceOptions{})
	if err != nil {
		return "", err
	}
	return r.URL(), nil
}

// close stops everything, the last started first.
func (s *services) close() {
	if err := s.Close(); err != nil {
		fmt.Fprintf(s.stderr, "loadgen: %v\n", err)
	}
}

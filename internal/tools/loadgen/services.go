package loadgen

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"time"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/stack"
)

// loopbackProxies are the trusted proxies of a service in trust mode:
// loadgen, on this machine, stands where the authenticating proxy would.
const loopbackProxies = "127.0.0.1,::1"

// services are waitq's services a measurement runs in this process over
// its infra (stack.Group), each with the infra's environment (serviceEnv)
// and its own settings on top, and what else it stops at the end: Close
// stops them in reverse order, the broker and Redis last.
type services struct {
	stack.Group
	stderr                  io.Writer
	producer, token, secret string // producer-api's base URL and admin token; the ticket secret of producer-api and the gateways
}

// startStack starts the broker and Redis (startInfra) of a measurement
// whose services run with the fast track as fast; close stops everything.
func startStack(ctx context.Context, cluster, fast bool, stderr io.Writer) (*infra, error) {
	st, err := startInfra(ctx, cluster)
	if err != nil {
		return nil, err
	}
	st.services = services{Group: stack.Group{Env: st.serviceEnv(fast, nil)}, stderr: stderr,
		token: stack.RandomHex(16), secret: stack.RandomHex(32)}
	st.AtClose(st.stop)
	return st, nil
}

// startProducerStack starts a stack (startStack, the fast track on) and
// producer-api on it (startProducer, extra on top).
func startProducerStack(ctx context.Context, cluster bool, extra map[string]string, stderr io.Writer) (*infra, error) {
	st, err := startStack(ctx, cluster, true, stderr)
	if err == nil {
		if err = st.startProducer(ctx, extra); err != nil {
			st.close()
		}
	}
	if err != nil {
		return nil, err
	}
	return st, nil
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

// startProducer runs producer-api with the admin token and ticket secret
// of s. It trusts X-User-Id (loadgen names its users, as a proxy would)
// unless extra, on top, says otherwise.
func (s *services) startProducer(ctx context.Context, extra map[string]string) (err error) {
	env := map[string]string{
		"WAITQ_TICKET_SECRET":     s.secret,
		"WAITQ_ADMIN_TOKEN":       s.token,
		"WAITQ_TRUST_USER_HEADER": "true",
		"WAITQ_TRUSTED_PROXIES":   loopbackProxies,
	}
	maps.Copy(env, extra)
	s.producer, err = s.start(ctx, &app.Producer{}, env)
	return err
}

// startIngest runs ingest-consumer with the service's defaults (group,
// discovery interval, batch size).
func (s *services) startIngest(ctx context.Context) error {
	_, err := s.start(ctx, &app.Ingest{}, nil)
	return err
}

// startGateway runs a ws-gateway with the ticket secret of s, extra on
// top; base is its URL.
func (s *services) startGateway(ctx context.Context, extra map[string]string) (base string, err error) {
	env := map[string]string{"WAITQ_TICKET_SECRET": s.secret}
	maps.Copy(env, extra)
	return s.start(ctx, &app.Gateway{}, env)
}

// serveLoopback serves h on a free loopback port until stop.
func serveLoopback(name string, h http.Handler) (base string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("%s: listen: %w", name, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}, nil
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

// close stops everything, the last started first.
func (s *services) close() {
	if err := s.Close(); err != nil {
		fmt.Fprintf(s.stderr, "loadgen: %v\n", err)
	}
}

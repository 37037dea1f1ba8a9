package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/stack/svcproc"
)

// loopbackProxies are the trusted proxies of a service in trust mode:
// loadgen, on this machine, stands where the authenticating proxy would.
const loopbackProxies = "127.0.0.1,::1"

// Fixed settings of the child processes (the ws-gateway of sockets, the
// programs of cost).
const (
	childStopWait  = 10 * time.Second // SIGTERM → SIGKILL
	childOutputCap = 64 << 10         // bytes of a child's log passed on to stderr
)

// infra is the one way a measurement starts what it runs against (package
// stack): the broker (kfake in this process or, for cost, the kfake-broker
// binary as a child) and a redis-server child or a Redis Cluster of three,
// all on 127.0.0.1, and waitq's services over them, in this process
// (stack.Group, each with serviceEnv and its own settings on top) or as
// child processes (startChild). close stops what the group holds in
// reverse order, the broker and Redis last.
type infra struct {
	stack.Group
	kafka                   *kfake.Cluster
	broker                  *svcproc.Proc // the kfake-broker child, when kafka is nil
	brokerAddr              string        // … and its address
	redis                   *stack.Redis
	client                  redis.UniversalClient // of redis, closed by close
	stderr                  io.Writer
	producer, token, secret string   // producer-api's base URL and admin token; the ticket secret of producer-api and the gateways
	gateways                []string // the base URLs of the gateways started
}

// stackSpec is what a measurement runs against besides the broker and
// Redis; the zero spec is the broker and one redis-server alone.
type stackSpec struct {
	cluster     bool              // a Redis Cluster of three masters instead of one redis-server
	slow        bool              // the services' fast track off (WAITQ_FAST_TRACK=false)
	brokerBin   string            // the kfake-broker binary to run as a child ("": kfake in this process)
	producer    bool              // producer-api, trusting X-User-Id unless producerEnv says otherwise
	producerEnv map[string]string // producer-api's settings on top of those
	events      map[string]string // event id → admin PUT body, created before ingest-consumer starts (its first discovery finds them: no rebalance follows)
	ingest      bool              // ingest-consumer with the service's defaults
	gateways    int               // ws-gateways
	gatewayEnv  map[string]string // the gateways' settings on top of the stack's
}

// startStack starts what spec names; on error nothing is left running.
func startStack(ctx context.Context, spec stackSpec, stderr io.Writer) (_ *infra, err error) {
	r, err := stack.StartRedis(ctx, stack.RedisOptions{Cluster: spec.cluster})
	if stack.NotInstalled(err) {
		return nil, fmt.Errorf("%w, or run scripts/bench-joinpath.sh, which does", err)
	}
	if err != nil {
		return nil, err
	}
	st := &infra{redis: r, stderr: stderr, token: stack.RandomHex(16), secret: stack.RandomHex(32)}
	st.AtClose(st.stopInfra)
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	if st.client, err = r.Conn().Client(); err != nil {
		return nil, err
	}
	if spec.brokerBin == "" {
		st.kafka, err = stack.StartKafka(stack.KafkaOptions{})
	} else if st.brokerAddr, err = svcproc.FreeAddr(); err == nil {
		own := map[string]string{"WAITQ_BROKER_ADDR": st.brokerAddr, "WAITQ_LOG_LEVEL": "warn"}
		if st.broker, _, err = st.startChild(ctx, spec.brokerBin, nil, st.brokerAddr, own, false); err == nil {
			st.AtClose(func() { st.stopChild(st.broker) })
		}
	}
	if err != nil {
		return nil, err
	}
	st.Env = st.serviceEnv(!spec.slow, nil)
	return st, st.startServices(ctx, spec)
}

// startServices starts spec's services in this process, in the order a
// deployment starts them.
func (s *infra) startServices(ctx context.Context, spec stackSpec) error {
	if spec.producer {
		env := map[string]string{
			"WAITQ_TICKET_SECRET":     s.secret,
			"WAITQ_ADMIN_TOKEN":       s.token,
			"WAITQ_TRUST_USER_HEADER": "true",
			"WAITQ_TRUSTED_PROXIES":   loopbackProxies,
		}
		maps.Copy(env, spec.producerEnv)
		var err error
		if s.producer, err = s.start(ctx, &app.Producer{}, env); err != nil {
			return err
		}
	}
	for id, body := range spec.events {
		if err := createEvent(ctx, s.producer, s.token, id, body); err != nil {
			return err
		}
	}
	if spec.ingest {
		if _, err := s.start(ctx, &app.Ingest{}, nil); err != nil {
			return err
		}
	}
	for range spec.gateways {
		env := map[string]string{"WAITQ_TICKET_SECRET": s.secret}
		maps.Copy(env, spec.gatewayEnv)
		gw, err := s.start(ctx, &app.Gateway{}, env)
		if err != nil {
			return err
		}
		s.gateways = append(s.gateways, gw)
	}
	return nil
}

// start runs svc with extra settings on top and stops it at close; base is
// its URL.
func (s *infra) start(ctx context.Context, svc app.Service, extra map[string]string) (base string, err error) {
	r, err := s.Start(ctx, svc, extra, stack.ServiceOptions{})
	if err != nil {
		return "", err
	}
	return r.URL(), nil
}

// Brokers returns the broker addresses.
func (s *infra) Brokers() []string {
	if s.kafka == nil {
		return []string{s.brokerAddr}
	}
	return s.kafka.ListenAddrs()
}

// serviceEnv is the environment of a waitq service run against the broker
// and the Redis: its broker and Redis, the fast track as given, no
// per-client rate limit (one client address sends everything), and extra
// on top.
func (s *infra) serviceEnv(fast bool, extra map[string]string) map[string]string {
	m := map[string]string{
		"WAITQ_KAFKA_BROKERS": strings.Join(s.Brokers(), ","),
		"WAITQ_FAST_TRACK":    fmt.Sprint(fast),
		"WAITQ_RATE":          "0",
		"WAITQ_CONNECT_RATE":  "0", // gateways only; others ignore it
		"WAITQ_HOLD_RATE":     "0", // gateways only: releases and verifies from one address
	}
	maps.Copy(m, s.redis.Env())
	maps.Copy(m, extra)
	return m
}

// redisKind names the Redis for a table's target line.
func (s *infra) redisKind(ctx context.Context) string {
	if s.redis.Cluster != nil {
		return fmt.Sprintf("Redis Cluster of %d redis-server %s children", len(s.redis.Cluster.Addrs()), redisVersion(ctx, s.client))
	}
	return "redis-server " + redisVersion(ctx, s.client) + " child"
}

// stopInfra stops the broker and the Redis.
func (s *infra) stopInfra() {
	if s.client != nil {
		_ = s.client.Close()
	}
	if s.kafka != nil {
		s.kafka.Close()
	}
	s.redis.Close()
}

// close stops everything, the last started first.
func (s *infra) close() {
	if err := s.Close(); err != nil {
		fmt.Fprintf(s.stderr, "loadgen: %v\n", err)
	}
}

// startChild runs bin with args as a child process in a process group of
// its own (a terminal's Ctrl-C reaches loadgen only, which stops it) with
// the services' environment, the fast track on and own on top, and waits
// until it is ready: its /readyz answers 200, or, for a program that
// serves no HTTP, lsn takes a connection. Loadgen's other WAITQ_ variables
// are kept with pass (and returned, for the report's target line), dropped
// without. The first childOutputCap bytes of its output go to stderr.
func (s *infra) startChild(ctx context.Context, bin string, args []string, lsn string, own map[string]string, pass bool) (*svcproc.Proc, []string, error) {
	env, passed := childEnv(s.serviceEnv(true, own), pass)
	p, err := svcproc.Start(ctx, bin, svcproc.Options{Args: args, ListenAddr: lsn, Env: env, Echo: s.stderr, OutputLimit: childOutputCap})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Base(bin), err)
	}
	return p, passed, nil
}

// stopChild ends p: SIGTERM, then SIGKILL after childStopWait.
func (s *infra) stopChild(p *svcproc.Proc) {
	if err := p.Stop(childStopWait); errors.Is(err, svcproc.ErrNotStopped) {
		fmt.Fprintf(s.stderr, "loadgen: %v\n", err)
	}
}

// childEnv is the environment of a child process: loadgen's own without
// svcproc.AddrVar and the variables own sets, then own's, sorted.
// Loadgen's other WAITQ_ variables are kept with pass (and returned),
// dropped without.
func childEnv(own map[string]string, pass bool) (env, passed []string) {
	env = make([]string, 0, len(os.Environ())+len(own))
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, mine := own[k]; mine || k == svcproc.AddrVar {
			continue
		}
		if strings.HasPrefix(k, "WAITQ_") {
			if !pass {
				continue
			}
			passed = append(passed, kv)
		}
		env = append(env, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(own)) {
		env = append(env, k+"="+own[k])
	}
	return env, passed
}

// loopback is the address of serve for a free loopback port.
const loopback = "127.0.0.1:0"

// serve serves h on addr until stop.
func serve(name, addr string, h http.Handler) (base string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
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

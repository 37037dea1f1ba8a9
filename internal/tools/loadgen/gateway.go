package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/stack/svcproc"
)

// Fixed settings of the ws-gateway child process.
const (
	gatewayReadyWait = 30 * time.Second // start → /readyz 200
	gatewayStopWait  = 10 * time.Second // SIGTERM → SIGKILL
	gatewayOutputCap = 64 << 10         // bytes of the gateway's log passed on to stderr
)

// gatewayProc is the ws-gateway child process under measurement, in a
// process group of its own: a terminal's Ctrl-C reaches loadgen only, which
// then closes the clients before it stops the gateway.
type gatewayProc struct {
	*svcproc.Proc
	passed []string // WAITQ_ variables taken over from loadgen's environment
}

// startGateway starts the binary of cfg against st with a free loopback port
// and waits until its /readyz answers 200; on error nothing is left running.
// The first gatewayOutputCap bytes of its output go to stderr.
func startGateway(ctx context.Context, cfg socketsConfig, st *infra, secret string, stderr io.Writer) (*gatewayProc, error) {
	own := map[string]string{
		"WAITQ_KAFKA_BROKERS":    strings.Join(st.Brokers(), ","),
		"WAITQ_TICKET_SECRET":    secret,
		"WAITQ_STATUS_INTERVAL":  cfg.interval.String(),
		"WAITQ_ADMIT_INTERVAL":   "1h",
		"WAITQ_DISCONNECT_GRACE": "1h",
		"WAITQ_LOG_LEVEL":        "warn",
		"WAITQ_SHUTDOWN_TIMEOUT": "5s",
		"WAITQ_CONNECT_RATE":     "0", // every client dials from the same few addresses
		"WAITQ_HOLD_RATE":        "0", // and releases from them
	}
	maps.Copy(own, st.redis.Env())
	g := &gatewayProc{}
	var env []string
	env, g.passed = childEnv(own, true)
	p, err := svcproc.Start(ctx, cfg.gatewayBin, svcproc.Options{
		Env: env, Echo: stderr, OutputLimit: gatewayOutputCap, ReadyLimit: gatewayReadyWait,
	})
	if err != nil {
		return nil, fmt.Errorf("ws-gateway: %w", err)
	}
	g.Proc = p
	return g, nil
}

// passedEnv describes the WAITQ_ variables the gateway took over from
// loadgen's environment, for the target line.
func (g *gatewayProc) passedEnv() string {
	if len(g.passed) == 0 {
		return ""
	}
	return "; from the environment: " + strings.Join(g.passed, " ")
}

// stop ends the gateway: SIGTERM, then SIGKILL after gatewayStopWait.
func (g *gatewayProc) stop(stderr io.Writer) {
	if err := g.Stop(gatewayStopWait); errors.Is(err, svcproc.ErrNotStopped) {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
	}
}

// metrics reads the gateway's unlabelled Prometheus samples.
func (g *gatewayProc) metrics(ctx context.Context) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	return g.Metrics(ctx)
}

// childEnv is the environment of a service run as a child process:
// loadgen's own without svcproc.AddrVar and the variables own sets, then
// own's, sorted. Loadgen's other WAITQ_ variables are kept with pass (and
// returned, for the report's target line), dropped without.
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

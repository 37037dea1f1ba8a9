//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	dockernetwork "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/stack/promtext"
	"github.com/waitq/waitq/internal/testkit/testclient"
)

// httpPort is the port every waitq service listens on in its container.
const httpPort = "8080/tcp"

// stack is one Docker network with a broker (alias kafka) and Redis (alias
// redis) on it, to which a test adds waitq's services.
type stack struct {
	t     *testing.T
	net   *testcontainers.DockerNetwork
	Kafka *node
	Redis *node
	RDB   *redis.Client // Redis through its published port
}

// node is one container of the stack.
type node struct {
	testcontainers.Container
	t     *testing.T
	alias string
	port  string // the port published to the test, e.g. 8080/tcp
}

// newStack starts a network with the broker and Redis; everything is removed
// when the test ends.
func newStack(t *testing.T) *stack {
	t.Helper()
	requireDocker(t)
	nw, err := network.New(t.Context(), network.WithLabels(map[string]string{label: runLabel}))
	testcontainers.CleanupNetwork(t, nw)
	if err != nil {
		t.Fatalf("create network: %v", err)
	}
	s := &stack{t: t, net: nw}
	s.Redis = s.run(img.redis, "redis", "6379/tcp", nil, nil,
		wait.ForLog("Ready to accept connections").WithStartupTimeout(30*time.Second))
	s.Kafka = s.run(img.broker, "kafka", "9092/tcp", brokerEnv(), nil, brokerReady())
	s.RDB = redis.NewClient(&redis.Options{Addr: s.Redis.hostPort()})
	t.Cleanup(func() { s.RDB.Close() })
	return s
}

// brokerEnv configures the broker to advertise kafka:9092 on the network,
// keep its log across restarts, and allow short group sessions so that a
// killed consumer's partitions move within seconds.
func brokerEnv() map[string]string {
	if !img.apacheKafka {
		return map[string]string{
			"WAITQ_BROKER_ADDR":               "0.0.0.0:9092",
			"WAITQ_BROKER_ADVERTISE":          "kafka:9092",
			"WAITQ_KAFKA_DATA_DIR":            "/data",
			"WAITQ_GROUP_MIN_SESSION_TIMEOUT": "500ms",
		}
	}
	// Apache Kafka in KRaft mode, as in compose.yaml.
	return map[string]string{
		"KAFKA_NODE_ID":                                  "1",
		"KAFKA_PROCESS_ROLES":                            "broker,controller",
		"KAFKA_LISTENERS":                                "PLAINTEXT://:9092,CONTROLLER://:9093",
		"KAFKA_ADVERTISED_LISTENERS":                     "PLAINTEXT://kafka:9092",
		"KAFKA_CONTROLLER_LISTENER_NAMES":                "CONTROLLER",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":           "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"KAFKA_CONTROLLER_QUORUM_VOTERS":                 "1@kafka:9093",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":            "1",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":         "0",
		"KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS":             "500",
		"KAFKA_AUTO_CREATE_TOPICS_ENABLE":                "false",
	}
}

func brokerReady() wait.Strategy {
	if !img.apacheKafka {
		return wait.ForLog(`"msg":"listening"`).WithStartupTimeout(30 * time.Second)
	}
	return wait.ForLog("Kafka Server started").WithStartupTimeout(2 * time.Minute)
}

// run starts image as alias on the stack's network with port published.
func (s *stack) run(image, alias, port string, env map[string]string, cmd []string, ready wait.Strategy) *node {
	t := s.t
	t.Helper()
	ctr, err := testcontainers.GenericContainer(t.Context(), testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:          image,
			Name:           fmt.Sprintf("waitq-it-%s-%s", alias, s.net.Name[len(s.net.Name)-8:]),
			Env:            env,
			Cmd:            cmd,
			ExposedPorts:   []string{port},
			Networks:       []string{s.net.Name},
			NetworkAliases: map[string][]string{s.net.Name: {alias}},
			Labels:         map[string]string{label: runLabel},
			WaitingFor:     ready,
		},
		Started: true,
	})
	testcontainers.CleanupContainer(t, ctr)
	n := &node{Container: ctr, t: t, alias: alias, port: port}
	// Registered after CleanupContainer, so it runs before the removal.
	t.Cleanup(func() {
		if t.Failed() && ctr != nil {
			n.dumpLogs()
		}
	})
	if err != nil {
		t.Fatalf("start %s (%s): %v", alias, image, err)
	}
	return n
}

// serviceEnv is what every waitq service is given on the network.
func serviceEnv(extra map[string]string) map[string]string {
	env := map[string]string{
		"WAITQ_KAFKA_BROKERS":    "kafka:9092",
		"WAITQ_REDIS_URL":        "redis://redis:6379/0",
		"WAITQ_HTTP_ADDR":        ":8080",
		"WAITQ_SHUTDOWN_TIMEOUT": "3s",
		"WAITQ_LOG_LEVEL":        "info",
	}
	maps.Copy(env, extra)
	return env
}

func (s *stack) service(image, alias string, env map[string]string) *node {
	s.t.Helper()
	return s.run(image, alias, httpPort, serviceEnv(env), nil,
		wait.ForHTTP("/readyz").WithPort(httpPort).WithStartupTimeout(60*time.Second))
}

// Producer starts producer-api and returns it with a client for it.
func (s *stack) Producer() (*node, testclient.Producer) {
	s.t.Helper()
	return s.ProducerNamed("producer")
}

// ProducerNamed starts a producer-api named alias.
func (s *stack) ProducerNamed(alias string) (*node, testclient.Producer) {
	s.t.Helper()
	n := s.service(img.producer, alias, map[string]string{
		"WAITQ_TICKET_SECRET":   ticketSecret,
		"WAITQ_ADMIN_TOKEN":     adminToken,
		"WAITQ_RATE":            "0", // every join of the test comes from one address
		"WAITQ_PUBLISH_TIMEOUT": "2s",
		// The test's clients stand where an authenticating proxy would;
		// they reach the container through Docker's port mapping, from an
		// address of its bridge network, so every peer is trusted.
		"WAITQ_TRUST_USER_HEADER": "true",
		"WAITQ_TRUSTED_PROXIES":   "0.0.0.0/0,::/0",
	})
	return n, testclient.Producer{Base: n.URL(), AdminToken: adminToken}
}

// Ingest starts an ingest-consumer named alias.
func (s *stack) Ingest(alias string) *node {
	s.t.Helper()
	return s.ingest(alias, "true")
}

// IngestTickOnly starts an ingest consumer whose writes admit nobody
// (WAITQ_FAST_TRACK=false): only the gateways' slot monitors admit, from a
// line in stamp order. Scenarios that check who is admitted first use it:
// with the fast track a join ingested early from one partition may take
// the last free slot before an earlier join still in flight on another.
func (s *stack) IngestTickOnly(alias string) *node {
	s.t.Helper()
	return s.ingest(alias, "false")
}

func (s *stack) ingest(alias, fastTrack string) *node {
	s.t.Helper()
	return s.service(img.ingest, alias, map[string]string{
		"WAITQ_KAFKA_SESSION_TIMEOUT": "1500ms",
		"WAITQ_DISCOVERY_INTERVAL":    "200ms",
		"WAITQ_FAST_TRACK":            fastTrack,
	})
}

// Gateway starts a ws-gateway named alias whose monitor admits every
// admitEvery.
func (s *stack) Gateway(alias string, admitEvery time.Duration) *node {
	s.t.Helper()
	return s.service(img.gateway, alias, map[string]string{
		"WAITQ_TICKET_SECRET":    ticketSecret,
		"WAITQ_STATUS_INTERVAL":  "250ms",
		"WAITQ_ADMIT_INTERVAL":   admitEvery.String(),
		"WAITQ_DISCONNECT_GRACE": "15s",
		"WAITQ_RATE":             "0",
		"WAITQ_CONNECT_RATE":     "0", // every socket of the test comes from one address
		"WAITQ_HOLD_RATE":        "0", // and every release and hold
	})
}

// hostPort is where the test reaches the node's published port.
func (n *node) hostPort() string {
	n.t.Helper()
	ep, err := n.endpoint()
	if err != nil {
		n.t.Fatalf("%s: %v", n.alias, err)
	}
	return ep
}

// endpoint is where the node's published port is now: it changes when the
// container starts again or rejoins the network.
func (n *node) endpoint() (string, error) {
	ep, err := n.PortEndpoint(context.Background(), n.port, "")
	if err != nil {
		return "", fmt.Errorf("published port %s: %w", n.port, err)
	}
	return ep, nil
}

// URL is the node's HTTP base URL for the test (it changes on restart).
func (n *node) URL() string { return "http://" + n.hostPort() }

// WS is the WebSocket URL of path (a statusUrl) on the node.
func (n *node) WS(path string) string { return "ws://" + n.hostPort() + path }

// readyzAnswer asks the service at addr for /readyz: "" for a 200, else
// the status and the body's code, or "no answer: " and the error's kind.
func readyzAnswer(ctx context.Context, hc *http.Client, addr string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "no answer: " + testclient.ErrorKind(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return ""
	}
	var body httpkit.ErrorBody
	_ = json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&body)
	return strings.TrimSpace(fmt.Sprintf("%d %s", resp.StatusCode, body.Error.Code))
}

// look is the node's container as the engine has it: its state
// ("running", "paused", "exited 2 (oom)", …, or the inspect's error) and
// its HTTP address on the network nw ("" when it is not on it).
func (n *node) look(ctx context.Context, nw string) (state, addr string) {
	res, err := docker.ContainerInspect(ctx, n.GetContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		return "inspect: " + testclient.ErrorKind(err), ""
	}
	if ns := res.Container.NetworkSettings; ns != nil {
		if ep := ns.Networks[nw]; ep != nil && ep.IPAddress.IsValid() {
			addr = net.JoinHostPort(ep.IPAddress.String(), strings.TrimSuffix(n.port, "/tcp"))
		}
	}
	st := res.Container.State
	if st == nil {
		return "no state", addr
	}
	state = string(st.Status)
	if st.Status == "exited" || st.Status == "dead" {
		state += " " + strconv.Itoa(st.ExitCode)
	}
	if st.OOMKilled {
		state += " (oom)"
	}
	return state, addr
}

// Kill sends SIGKILL: no shutdown code runs.
func (n *node) Kill() {
	n.t.Helper()
	if err := n.kill(); err != nil {
		n.t.Fatalf("kill %s: %v", n.alias, err)
	}
	n.t.Logf("%s SIGKILLed", n.alias)
}

// Pause freezes every process of the node (cgroup freezer): its peers see
// it hang, not refuse.
func (n *node) Pause() {
	n.t.Helper()
	if err := n.pause(); err != nil {
		n.t.Fatalf("pause %s: %v", n.alias, err)
	}
	n.t.Logf("%s paused", n.alias)
}

// Unpause thaws a paused node.
func (n *node) Unpause() {
	n.t.Helper()
	if err := n.unpause(); err != nil {
		n.t.Fatalf("unpause %s: %v", n.alias, err)
	}
	n.t.Logf("%s unpaused", n.alias)
}

// The faults as the Docker Engine injects them, without failing the test:
// the fault campaign's nemesis runs them from its own goroutines.

func (n *node) kill() error {
	_, err := docker.ContainerKill(context.Background(), n.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"})
	return err
}

func (n *node) pause() error {
	_, err := docker.ContainerPause(context.Background(), n.GetContainerID(), client.ContainerPauseOptions{})
	return err
}

func (n *node) unpause() error {
	_, err := docker.ContainerUnpause(context.Background(), n.GetContainerID(), client.ContainerUnpauseOptions{})
	return err
}

// stop is a graceful stop: SIGTERM, SIGKILL after 10 s.
func (n *node) stop() error {
	timeout := 10
	_, err := docker.ContainerStop(context.Background(), n.GetContainerID(), client.ContainerStopOptions{Timeout: &timeout})
	return err
}

// start starts a stopped or killed container without waiting for it to be
// ready.
func (n *node) start() error {
	_, err := docker.ContainerStart(context.Background(), n.GetContainerID(), client.ContainerStartOptions{})
	return err
}

// disconnect cuts the node off the stack's network: its peers and the test
// can no longer reach it, nor it them.
func (n *node) disconnect(nw *testcontainers.DockerNetwork) error {
	_, err := docker.NetworkDisconnect(context.Background(), nw.ID, client.NetworkDisconnectOptions{Container: n.GetContainerID(), Force: true})
	return err
}

// connect puts a cut-off node back on the network under its alias.
func (n *node) connect(nw *testcontainers.DockerNetwork) error {
	_, err := docker.NetworkConnect(context.Background(), nw.ID, client.NetworkConnectOptions{
		Container:      n.GetContainerID(),
		EndpointConfig: &dockernetwork.EndpointSettings{Aliases: []string{n.alias}},
	})
	return err
}

// Stop stops the node gracefully (SIGTERM, SIGKILL after 10 s).
func (n *node) Stop() {
	n.t.Helper()
	if err := n.stop(); err != nil {
		n.t.Fatalf("stop %s: %v", n.alias, err)
	}
	n.t.Logf("%s stopped", n.alias)
}

// Restart starts a stopped or killed node again, with the same settings and
// file system, and waits until it is ready.
func (n *node) Restart() {
	n.t.Helper()
	if err := n.Start(context.Background()); err != nil {
		n.t.Fatalf("restart %s: %v", n.alias, err)
	}
	n.t.Logf("%s restarted", n.alias)
}

// Ready reports whether the service's /readyz answers 200.
func (n *node) Ready() bool {
	return readyzAnswer(context.Background(), http.DefaultClient, n.hostPort()) == ""
}

// Metric returns an unlabelled metric of the service, or -1 when it cannot
// be read.
func (n *node) Metric(name string) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	m, err := promtext.Scrape(ctx, http.DefaultClient, n.URL()+"/metrics")
	if v, ok := m[name]; err == nil && ok {
		return v
	}
	return -1
}

func (n *node) dumpLogs() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := n.Logs(ctx)
	if err != nil {
		n.t.Logf("--- logs of %s: %v", n.alias, err)
		return
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 200 {
		lines = lines[len(lines)-200:]
	}
	n.t.Logf("--- last logs of %s ---\n%s", n.alias, strings.Join(lines, "\n"))
}

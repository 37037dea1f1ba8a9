package loadgen

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/tools/loadgen/procstat"
)

// RunSockets measures how many WebSockets (or SSE streams, -transport sse)
// one ws-gateway process holds with every status frame on time: it fills the
// lines in Redis, starts the gateway as a child process, connects the
// clients and watches whole status ticks.
func RunSockets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg socketsConfig
	if ok, err := begin("sockets", &cfg, args, stdout, stderr); !ok {
		return err
	}
	soft, hard, limErr := procstat.RaiseNoFile()
	fmt.Fprintf(stdout, "limits   nofile %d (hard %d)  ephemeral ports %s  client source addresses 127.0.0.%d-127.0.0.%d\n",
		soft, hard, procstat.EphemeralPorts(), firstSourceHost, lastSourceHost)
	if limErr != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", limErr)
	}
	if need := uint64(cfg.n) + 256; soft < need {
		fmt.Fprintf(stderr, "loadgen: nofile limit %d is below the %d this run needs in each process; dials past it will fail\n", soft, need)
	}

	st, err := startStack(ctx, stackSpec{}, stderr)
	if err != nil {
		return err
	}
	defer st.close()
	if err := seedLines(ctx, st, cfg, stderr); err != nil {
		return err
	}
	gw, passed, err := st.startChild(ctx, cfg.gatewayBin, nil, "", map[string]string{
		"WAITQ_TICKET_SECRET":    st.secret,
		"WAITQ_STATUS_INTERVAL":  cfg.interval.String(),
		"WAITQ_ADMIT_INTERVAL":   "1h",
		"WAITQ_DISCONNECT_GRACE": "1h",
		"WAITQ_LOG_LEVEL":        "warn",
		"WAITQ_SHUTDOWN_TIMEOUT": "5s",
	}, true)
	if err != nil {
		return err
	}
	defer st.stopChild(gw)
	fromEnv := ""
	if len(passed) > 0 {
		fromEnv = "; from the environment: " + strings.Join(passed, " ")
	}
	fmt.Fprintf(stdout, "target   ws-gateway %s child (pid %d)  redis-server %s child  kfake in-process; admissions off (WAITQ_ADMIT_INTERVAL=1h)%s\n",
		cfg.gatewayBin, gw.Pid(), redisVersion(ctx, st.client), fromEnv)
	signer, err := queue.NewTicketSigner(st.secret)
	if err != nil {
		return fmt.Errorf("ticket signer: %w", err)
	}
	f := newFleet(ctx, cfg, gw, signer)
	defer f.close()
	return f.run(ctx, st.client, stdout, stderr)
}

// socketUser returns the id of user i and the event of its line: the users
// go round-robin over the events sockets-1 … sockets-<events>.
func socketUser(i, events int) (user, event string) {
	return fmt.Sprintf("u%07d", i), "sockets-" + strconv.Itoa(i%events+1)
}

// seedLines creates the events and their topics and puts cfg.n users
// straight into the waiting lines.
func seedLines(ctx context.Context, st *infra, cfg socketsConfig, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	store, err := redisstore.New(st.client, redisstore.Options{})
	if err != nil {
		return err
	}
	evs := make([]queue.Event, cfg.events)
	for i := range evs {
		_, ev := socketUser(i, cfg.events)
		evs[i] = queue.Event{ID: ev, Capacity: 10, StaySeconds: 3600, State: queue.StateOpen, Partitions: 1}
	}
	if err := putEvents(ctx, store, kafkajoin.BrokerConfig{Brokers: st.Brokers()}, evs...); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	start := time.Now()
	err = ingestJoins(ctx, store, cfg.n, seedChunk, seedTimeout, func(j int, _ int64) queue.Message {
		user, ev := socketUser(j, cfg.events)
		return queue.Message{V: queue.MessageVersion, Op: queue.OpJoin, EventID: ev, UserID: user, TS: int64(j + 1), ID: "x"}
	}, nil)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	fmt.Fprintf(stderr, "  seed %5.1fs  %d users in %d lines\n", time.Since(start).Seconds(), cfg.n, cfg.events)
	return nil
}

// Bounds and fixed settings of "loadgen sockets".
const (
	maxSocketsDuration = 10 * time.Minute
	dialTimeout        = 15 * time.Second // one WebSocket handshake
	maxDialPhase       = 15 * time.Minute // all handshakes together
	seedChunk          = 5000             // join messages per Ingest call
	seedTimeout        = 5 * time.Minute  // creating the events and filling the lines
	firstSourceHost    = 2                // client source addresses 127.0.0.2 …
	lastSourceHost     = 254              // … 127.0.0.254
	tickSettle         = 1000             // ms after its connect before a client's frames count as regular ticks
	ticketLifetime     = time.Hour        // tickets outlive every run
	minFailStreak      = 400              // failed dials in a row that end the dial phase (at least)
	reservedFDs        = 64               // descriptors kept back during the dials for the measurement
	sseReadBuffer      = 512              // bytes of an SSE client's read buffer: an event is ~250
)

// socketsConfig are the settings of "loadgen sockets".
type socketsConfig struct {
	shown
	n               int
	events          int
	interval        time.Duration
	duration        time.Duration
	dialConcurrency int
	gatewayBin      string
	transport       string
}

// bind declares the sockets flags.
func (c *socketsConfig) bind(s *settings) {
	s.intVar(&c.n, "n", 10_000, 1, 250_000, "clients (WebSockets or SSE streams), one waiting user each")
	s.intVar(&c.events, "events", 1, 1, 1000, "events the users are spread over, round-robin")
	s.check(func() error {
		if c.events > c.n {
			return fmt.Errorf("-events %d: must be at most -n", c.events)
		}
		return nil
	})
	s.durVar(&c.interval, "interval", 5*time.Second, "100ms", "5m", "WAITQ_STATUS_INTERVAL of the gateway")
	s.fs.DurationVar(&c.duration, "duration", 30*time.Second, "measurement window once every client is connected (at most 10m; whole status intervals)")
	s.showAs("duration", func() string {
		return fmt.Sprintf("-duration %s (%d ticks)", time.Duration(c.ticks())*c.interval, c.ticks())
	})
	s.check(func() error {
		if c.duration < c.interval || c.duration > maxSocketsDuration {
			return fmt.Errorf("-duration %s: must be at least -interval and at most %s", c.duration, maxSocketsDuration)
		}
		return nil
	})
	s.intVar(&c.dialConcurrency, "dial-concurrency", 200, 1, 5000, "handshakes in flight at once")
	s.fs.StringVar(&c.gatewayBin, "gateway-bin", "", "ws-gateway binary to start (required; go build -o bin/ws-gateway ./cmd/ws-gateway)")
	s.oneOf(&c.transport, "transport", "how the clients hear: ws (WebSocket, /queue-status) or sse (server-sent events, /v1/events/{id}/stream)", "ws", "sse")
	s.check(c.checkGatewayBin)
}

// checkGatewayBin checks -gateway-bin names an executable file.
func (c *socketsConfig) checkGatewayBin() error {
	if _, err := exec.LookPath(c.gatewayBin); err != nil {
		return fmt.Errorf("-gateway-bin %q: required, the ws-gateway binary (go build -o bin/ws-gateway ./cmd/ws-gateway): %w", c.gatewayBin, err)
	}
	return nil
}

// client names one client of the run's transport, clients several.
func (c *socketsConfig) client() string {
	if c.transport == "sse" {
		return "SSE stream"
	}
	return "socket"
}

func (c *socketsConfig) clients() string { return c.client() + "s" }

// ticks returns the whole status intervals the measurement window spans.
func (c *socketsConfig) ticks() int {
	return max(1, int(c.duration/c.interval))
}

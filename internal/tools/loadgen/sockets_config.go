package loadgen

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

// Bounds and fixed settings of "loadgen sockets".
const (
	maxSockets         = 250_000
	maxSocketEvents    = 1000
	maxSocketsDuration = 10 * time.Minute
	minStatusInterval  = 100 * time.Millisecond
	maxStatusInterval  = 5 * time.Minute
	maxDialConcurrency = 5000
	dialTimeout        = 15 * time.Second // one WebSocket handshake
	maxDialPhase       = 15 * time.Minute // all handshakes together
	seedChunk          = 5000             // join messages per Ingest call
	seedTimeout        = 5 * time.Minute  // creating the events and filling the lines
	firstSourceHost    = 2                // client source addresses 127.0.0.2 …
	lastSourceHost     = 254              // … 127.0.0.254
	probeSettle        = 1000             // ms after its connect before the probe's frames count as ticks
	readersStopWait    = 15 * time.Second // closing the clients → every reader returned
	metricsTimeout     = 10 * time.Second // one /metrics or INFO read
	ticketLifetime     = time.Hour        // tickets outlive every run
	clientReadLimit    = 64 << 10         // bytes of one frame a client accepts
	minFailStreak      = 400              // failed dials in a row that end the dial phase (at least)
	reservedFDs        = 64               // descriptors kept back during the dials for the measurement
	socketEventPrefix  = "sockets-"       // event ids: sockets-1, sockets-2, …
	sseReadBuffer      = 512              // bytes of an SSE client's read buffer: an event is ~250
)

// The transports "loadgen sockets" measures: the WebSocket, or the stream
// route's server-sent events.
const (
	transportWS  = "ws"
	transportSSE = "sse"
)

// socketsConfig are the settings of "loadgen sockets".
type socketsConfig struct {
	n               int
	events          int
	interval        time.Duration
	duration        time.Duration
	dialConcurrency int
	gatewayBin      string
	transport       string
}

// bind declares the sockets flags.
func (c *socketsConfig) bind(fs *flag.FlagSet) {
	fs.IntVar(&c.n, "n", 10_000, "clients (WebSockets or SSE streams), one waiting user each")
	fs.IntVar(&c.events, "events", 1, "events the users are spread over, round-robin")
	fs.DurationVar(&c.interval, "interval", 5*time.Second, "WAITQ_STATUS_INTERVAL of the gateway")
	fs.DurationVar(&c.duration, "duration", 30*time.Second, "measurement window once every client is connected (at most 10m; whole status intervals)")
	fs.IntVar(&c.dialConcurrency, "dial-concurrency", 200, "handshakes in flight at once")
	fs.StringVar(&c.gatewayBin, "gateway-bin", "", "ws-gateway binary to start (required; go build -o bin/ws-gateway ./cmd/ws-gateway)")
	fs.StringVar(&c.transport, "transport", transportWS, "how the clients hear: ws (WebSocket, /queue-status) or sse (server-sent events, /v1/events/{id}/stream)")
}

// line returns the settings line of the sockets table.
func (c *socketsConfig) line() string {
	return fmt.Sprintf("-n %d -events %d -interval %s -duration %s (%d ticks) -dial-concurrency %d -transport %s",
		c.n, c.events, c.interval, time.Duration(c.ticks())*c.interval, c.ticks(), c.dialConcurrency, c.transport)
}

// validate checks the sockets flags.
func (c *socketsConfig) validate() error {
	var errs []error
	if c.n < 1 || c.n > maxSockets {
		errs = append(errs, fmt.Errorf("-n %d: must be between 1 and %d", c.n, maxSockets))
	}
	if c.events < 1 || c.events > maxSocketEvents || c.events > max(c.n, 1) {
		errs = append(errs, fmt.Errorf("-events %d: must be between 1 and %d and at most -n", c.events, maxSocketEvents))
	}
	if c.interval < minStatusInterval || c.interval > maxStatusInterval {
		errs = append(errs, fmt.Errorf("-interval %s: must be between %s and %s", c.interval, minStatusInterval, maxStatusInterval))
	}
	if c.duration < c.interval || c.duration > maxSocketsDuration {
		errs = append(errs, fmt.Errorf("-duration %s: must be at least -interval and at most %s", c.duration, maxSocketsDuration))
	}
	if c.dialConcurrency < 1 || c.dialConcurrency > maxDialConcurrency {
		errs = append(errs, fmt.Errorf("-dial-concurrency %d: must be between 1 and %d", c.dialConcurrency, maxDialConcurrency))
	}
	if c.transport != transportWS && c.transport != transportSSE {
		errs = append(errs, fmt.Errorf("-transport %q: must be %s or %s", c.transport, transportWS, transportSSE))
	}
	if c.gatewayBin == "" {
		errs = append(errs, errors.New("-gateway-bin is required (go build -o bin/ws-gateway ./cmd/ws-gateway)"))
	} else if fi, err := os.Stat(c.gatewayBin); err != nil {
		errs = append(errs, fmt.Errorf("-gateway-bin: %w", err))
	} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
		errs = append(errs, fmt.Errorf("-gateway-bin %s: not an executable file", c.gatewayBin))
	}
	return errors.Join(errs...)
}

// client names one client of the run's transport, clients several.
func (c *socketsConfig) client() string {
	if c.transport == transportSSE {
		return "SSE stream"
	}
	return "socket"
}

func (c *socketsConfig) clients() string { return c.client() + "s" }

// ticks returns the whole status intervals the measurement window spans.
func (c *socketsConfig) ticks() int {
	return max(1, int(c.duration/c.interval))
}

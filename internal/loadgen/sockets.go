package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/promtext"
	"github.com/waitq/waitq/internal/redisproc"
	"github.com/waitq/waitq/pkg/app"
	"github.com/waitq/waitq/pkg/kafkajoin"
	"github.com/waitq/waitq/pkg/queue"
	"github.com/waitq/waitq/pkg/redisstore"
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
	latencyBuckets     = 60_000           // 1 ms each, and one more for anything later
	probeSettle        = 1000             // ms after its connect before the probe's frames count as ticks
	gatewayReadyWait   = 30 * time.Second // start → /readyz 200
	gatewayStopWait    = 10 * time.Second // SIGTERM → SIGKILL
	gatewayOutputCap   = 64 << 10         // bytes of the gateway's log passed on to stderr
	readersStopWait    = 15 * time.Second // closing the clients → every reader returned
	metricsTimeout     = 10 * time.Second // one /metrics or INFO read
	ticketLifetime     = time.Hour        // tickets outlive every run
	clientReadLimit    = 64 << 10         // bytes of one frame a client accepts
	minFailStreak      = 400              // failed dials in a row that end the dial phase (at least)
	reservedFDs        = 64               // descriptors kept back during the dials for the measurement
	socketEventPrefix  = "sockets-"       // event ids: sockets-1, sockets-2, …
)

// socketsConfig are the settings of "loadgen sockets".
type socketsConfig struct {
	n               int
	events          int
	interval        time.Duration
	duration        time.Duration
	dialConcurrency int
	gatewayBin      string
}

// parseSockets reads the sockets flags; it returns flag.ErrHelp for -h.
func parseSockets(args []string, stderr io.Writer) (socketsConfig, error) {
	var c socketsConfig
	fs := flag.NewFlagSet("loadgen sockets", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.n, "n", 10_000, "WebSocket clients, one waiting user each")
	fs.IntVar(&c.events, "events", 1, "events the users are spread over, round-robin")
	fs.DurationVar(&c.interval, "interval", 5*time.Second, "WAITQ_STATUS_INTERVAL of the gateway")
	fs.DurationVar(&c.duration, "duration", 30*time.Second, "measurement window once every client is connected (at most 10m; whole status intervals)")
	fs.IntVar(&c.dialConcurrency, "dial-concurrency", 200, "WebSocket handshakes in flight at once")
	fs.StringVar(&c.gatewayBin, "gateway-bin", "", "ws-gateway binary to start (required; go build -o bin/ws-gateway ./cmd/ws-gateway)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, c.validate()
}

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
	if c.gatewayBin == "" {
		errs = append(errs, errors.New("-gateway-bin is required (go build -o bin/ws-gateway ./cmd/ws-gateway)"))
	} else if fi, err := os.Stat(c.gatewayBin); err != nil {
		errs = append(errs, fmt.Errorf("-gateway-bin: %w", err))
	} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
		errs = append(errs, fmt.Errorf("-gateway-bin %s: not an executable file", c.gatewayBin))
	}
	return errors.Join(errs...)
}

// ticks returns the whole status intervals the measurement window spans.
func (c *socketsConfig) ticks() int {
	return max(1, int(c.duration/c.interval))
}

// RunSockets measures how many WebSockets one ws-gateway process holds with
// every status frame on time: it fills the lines in Redis, starts the gateway
// as a child process, connects the clients and watches whole status ticks.
func RunSockets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseSockets(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	soft, hard, limErr := raiseNoFile()
	printMachine(stdout, "sockets")
	fmt.Fprintf(stdout, "settings -n %d -events %d -interval %s -duration %s (%d ticks) -dial-concurrency %d\n",
		cfg.n, cfg.events, cfg.interval, time.Duration(cfg.ticks())*cfg.interval, cfg.ticks(), cfg.dialConcurrency)
	fmt.Fprintf(stdout, "limits   nofile %d (hard %d)  ephemeral ports %s  client source addresses 127.0.0.%d-127.0.0.%d\n",
		soft, hard, ephemeralPorts(), firstSourceHost, lastSourceHost)
	if limErr != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", limErr)
	}
	if need := uint64(cfg.n) + 256; soft < need {
		fmt.Fprintf(stderr, "loadgen: nofile limit %d is below the %d this run needs in each process; dials past it will fail\n", soft, need)
	}

	st, err := startStack(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	rc := st.client
	events := socketEvents(cfg.events)
	if err := seedLines(ctx, rc, kafkajoin.BrokerConfig{Brokers: st.Brokers()}, events, cfg.n, stderr); err != nil {
		return err
	}

	secret := app.RandomHex(16)
	gw, err := startGateway(ctx, cfg, st, secret, stderr)
	if err != nil {
		return err
	}
	defer gw.stop(stderr)
	fmt.Fprintf(stdout, "target   ws-gateway %s child (pid %d)  redis-server %s child  kfake in-process; admissions off (WAITQ_ADMIT_INTERVAL=1h)%s\n",
		cfg.gatewayBin, gw.pid(), redisVersion(ctx, st.redis.URL()), gw.passedEnv())

	rssBefore, err := readRSS(gw.pid())
	if err != nil {
		return err
	}
	idle, err := gw.metrics(ctx)
	if err != nil {
		return err
	}
	signer, err := queue.NewTicketSigner(secret)
	if err != nil {
		return fmt.Errorf("ticket signer: %w", err)
	}
	fl := newFleet(ctx, cfg.n)
	defer fl.close(stderr)
	dr := fl.dialAll(ctx, cfg, gw, events, signer, stderr)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	rssAfter, err := readRSS(gw.pid())
	if err != nil {
		return err
	}
	res := socketsResult{cfg: cfg, dial: dr, rssBefore: rssBefore, rssAfter: rssAfter, idle: idle,
		gwFDs: openFDs(gw.pid()), gwNoFile: noFileLimit(gw.pid()), selfFDs: openFDs(os.Getpid()), selfNoFile: noFileLimit(os.Getpid())}
	if dr.connected == 0 {
		err = errors.New("no socket connected")
	} else {
		if err = fl.measure(ctx, cfg, gw, rc, &res, stderr); err != nil {
			err = fmt.Errorf("measure: %w", err)
		}
	}
	fl.collectErrors(&res)
	res.gwLogDropped = gw.out.Dropped()
	fmt.Fprintln(stdout)
	printSockets(stdout, &res)
	return err
}

// socketEvents returns the ids of n bench events.
func socketEvents(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = socketEventPrefix + strconv.Itoa(i+1)
	}
	return ids
}

// socketUser returns the id of user i and the event of its line.
func socketUser(i int, events []string) (user, event string) {
	return fmt.Sprintf("u%07d", i), events[i%len(events)]
}

// seedLines creates the events and their topics and puts n users straight
// into the waiting lines, round-robin over the events.
func seedLines(ctx context.Context, rc *redis.Client, conn kafkajoin.BrokerConfig, events []string, n int, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	store := redisstore.New(rc)
	pub := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: conn})
	defer pub.Close()
	for _, ev := range events {
		e := queue.Event{ID: ev, Capacity: 10, HoldSeconds: 3600, State: queue.StateOpen, Partitions: 1}
		if _, err := store.PutEvent(ctx, e); err != nil {
			return fmt.Errorf("seed: create event %s: %w", ev, err)
		}
		if err := pub.Admin().EnsureTopic(ctx, ev, 1); err != nil {
			return fmt.Errorf("seed: create topic of %s: %w", ev, err)
		}
	}
	start := time.Now()
	msgs := make([]queue.Message, 0, seedChunk)
	joined := 0
	for i := 0; i < n; i += seedChunk {
		msgs = msgs[:0]
		for j := i; j < min(i+seedChunk, n); j++ {
			user, ev := socketUser(j, events)
			msgs = append(msgs, queue.Message{V: queue.MessageVersion, Op: queue.OpJoin, EventID: ev, UserID: user, TS: int64(j + 1), ID: "x"})
		}
		res, err := store.Ingest(ctx, msgs, 0)
		if err != nil {
			return fmt.Errorf("seed: users %d-%d: %w", i, i+len(msgs)-1, err)
		}
		if len(res.UnknownEvents) > 0 {
			return fmt.Errorf("seed: users %d-%d: unknown events %v", i, i+len(msgs)-1, res.UnknownEvents)
		}
		joined += res.Joined
	}
	if joined != n {
		return fmt.Errorf("seed: %d of %d users joined", joined, n)
	}
	fmt.Fprintf(stderr, "  seed %5.1fs  %d users in %d lines\n", time.Since(start).Seconds(), n, len(events))
	return nil
}

// gatewayProc is the ws-gateway child process under measurement.
type gatewayProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	base   string // http://127.0.0.1:port
	out    *capWriter
	passed []string // WAITQ_ variables taken over from loadgen's environment
	http   *http.Client
}

// startGateway starts the binary of cfg against st with a free loopback port
// and waits until its /readyz answers 200; on error nothing is left running.
func startGateway(ctx context.Context, cfg socketsConfig, st *stack, secret string, stderr io.Writer) (*gatewayProc, error) {
	port, err := redisproc.FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	own := map[string]string{
		"WAITQ_HTTP_ADDR":        addr,
		"WAITQ_KAFKA_BROKERS":    strings.Join(st.Brokers(), ","),
		"WAITQ_REDIS_URL":        st.redis.URL(),
		"WAITQ_TICKET_SECRET":    secret,
		"WAITQ_STATUS_INTERVAL":  cfg.interval.String(),
		"WAITQ_ADMIT_INTERVAL":   "1h",
		"WAITQ_DISCONNECT_GRACE": "1h",
		"WAITQ_LOG_LEVEL":        "warn",
		"WAITQ_SHUTDOWN_TIMEOUT": "5s",
	}
	g := &gatewayProc{
		exited: make(chan struct{}),
		base:   "http://" + addr,
		out:    &capWriter{w: stderr, left: gatewayOutputCap},
		http:   &http.Client{Timeout: metricsTimeout, Transport: &http.Transport{Proxy: nil}},
	}
	env := make([]string, 0, len(os.Environ())+len(own))
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, mine := own[k]; mine {
			continue
		}
		if strings.HasPrefix(k, "WAITQ_") {
			g.passed = append(g.passed, kv)
		}
		env = append(env, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(own)) {
		env = append(env, k+"="+own[k])
	}
	g.cmd = exec.Command(cfg.gatewayBin)
	g.cmd.Env = env
	g.cmd.Stdout, g.cmd.Stderr = g.out, g.out
	// Its own process group: a terminal's Ctrl-C reaches loadgen only, which
	// then closes the clients before it stops the gateway.
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := g.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ws-gateway %s: %w", cfg.gatewayBin, err)
	}
	go func() {
		_ = g.cmd.Wait()
		close(g.exited)
	}()
	if err := waitReady(ctx, g.base+"/readyz", g.exited, gatewayReadyWait); err != nil {
		g.stop(stderr)
		return nil, fmt.Errorf("ws-gateway: %w", err)
	}
	return g, nil
}

// pid returns the gateway's process id.
func (g *gatewayProc) pid() int { return g.cmd.Process.Pid }

// passedEnv describes the WAITQ_ variables the gateway took over from
// loadgen's environment, for the target line.
func (g *gatewayProc) passedEnv() string {
	if len(g.passed) == 0 {
		return ""
	}
	return "; from the environment: " + strings.Join(g.passed, " ")
}

// alive reports whether the gateway is still running.
func (g *gatewayProc) alive() bool {
	select {
	case <-g.exited:
		return false
	default:
		return true
	}
}

// stop ends the gateway: SIGTERM, then SIGKILL after gatewayStopWait.
func (g *gatewayProc) stop(stderr io.Writer) {
	defer g.http.CloseIdleConnections()
	if !g.alive() {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
		return
	case <-time.After(gatewayStopWait):
	}
	fmt.Fprintf(stderr, "loadgen: ws-gateway did not stop within %s of SIGTERM; killing it\n", gatewayStopWait)
	_ = g.cmd.Process.Kill()
	<-g.exited
}

// metrics reads the gateway's unlabelled Prometheus samples.
func (g *gatewayProc) metrics(ctx context.Context) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	m, err := promtext.Scrape(ctx, g.http, g.base+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("ws-gateway metrics: %w", err)
	}
	return m, nil
}

// capWriter passes the first left bytes to w and drops the rest, so a
// gateway logging every socket cannot flood the progress output.
type capWriter struct {
	mu      sync.Mutex
	w       io.Writer
	left    int
	dropped int
}

// Write implements io.Writer; it never fails.
func (c *capWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(c.left, len(p))
	if n > 0 {
		_, _ = c.w.Write(p[:n])
		c.left -= n
	}
	c.dropped += len(p) - n
	return len(p), nil
}

// Dropped returns the bytes not passed on.
func (c *capWriter) Dropped() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

// raiseNoFile lifts the soft limit of open files to the hard limit; child
// processes (the gateway) inherit it. It returns the limits in force.
func raiseNoFile() (soft, hard uint64, err error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, 0, fmt.Errorf("get RLIMIT_NOFILE: %w", err)
	}
	if l.Cur >= l.Max {
		return uint64(l.Cur), uint64(l.Max), nil
	}
	want := l
	want.Cur = want.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		return uint64(l.Cur), uint64(l.Max), fmt.Errorf("raise RLIMIT_NOFILE to %d: %w", want.Max, err)
	}
	return uint64(want.Cur), uint64(want.Max), nil
}

// ephemeralPorts returns the kernel's local port range, or "?".
func ephemeralPorts() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b)), "-")
}

// readRSS returns the resident set of process pid in bytes.
func readRSS(pid int) (int64, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read rss: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v) // "12345 kB"
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read rss: %s: %w", path, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("read rss: %s has no VmRSS line", path)
}

// openFDs returns the number of descriptors process pid holds, or -1.
func openFDs(pid int) int {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// noFileLimit returns the soft limit of open files of process pid, or "?".
func noFileLimit(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		return "?"
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				return f[0]
			}
		}
	}
	return "?"
}

// selfCPU returns the CPU time this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisInfo returns the key:value lines of INFO sections, read with one
// command.
func redisInfo(ctx context.Context, rc *redis.Client, sections ...string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	text, err := rc.Info(ctx, sections...).Result()
	if err != nil {
		return nil, fmt.Errorf("redis INFO %s: %w", strings.Join(sections, " "), err)
	}
	out := map[string]string{}
	for line := range strings.Lines(text) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

// latencyHist counts delivery latencies in 1 ms buckets; safe for
// concurrent use, fixed size whatever the number of frames.
type latencyHist struct {
	buckets [latencyBuckets + 1]atomic.Int64
	count   atomic.Int64
	maxUs   atomic.Int64
}

// record adds one latency in microseconds.
func (h *latencyHist) record(us int64) {
	us = max(us, 0)
	h.buckets[min(us/1000, latencyBuckets)].Add(1)
	h.count.Add(1)
	for m := h.maxUs.Load(); us > m && !h.maxUs.CompareAndSwap(m, us); m = h.maxUs.Load() {
	}
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 1) as the
// lower edge of its bucket; frames at or past the last bucket count as its
// edge.
func (h *latencyHist) percentile(p float64) time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(float64(n)*p)), 1)
	var seen int64
	for i := range h.buckets {
		if seen += h.buckets[i].Load(); seen >= rank {
			return time.Duration(i) * time.Millisecond
		}
	}
	return latencyBuckets * time.Millisecond
}

// max returns the largest latency recorded.
func (h *latencyHist) max() time.Duration {
	return time.Duration(h.maxUs.Load()) * time.Microsecond
}

// wsClient is one connected socket and what it received in the window.
type wsClient struct {
	ws       *websocket.Conn
	inWindow atomic.Int32
}

// fleet is every client socket of a run. Each socket has one reader
// goroutine; counters are shared atomics, so memory per client stays a few
// hundred bytes beyond the socket itself.
type fleet struct {
	ctx     context.Context // readers run until it ends
	cancel  context.CancelFunc
	clients []*wsClient // by user index; nil where the dial failed
	readers sync.WaitGroup

	lat       latencyHist
	winStart  atomic.Int64 // window of server stamps (ms); set before winEnd
	winEnd    atomic.Int64
	frozen    atomic.Bool  // frames arriving after the window's grace do not count
	probe     atomic.Bool  // the first connected client watches the tick phase
	probeTick atomic.Int64 // server stamp of the probe's latest regular tick
	status    atomic.Int64 // status frames received in all
	other     atomic.Int64 // frames of other types
	connected atomic.Int64
	failed    atomic.Int64
	streak    atomic.Int64 // failed dials since the last success
	dropped   atomic.Int64 // sockets that ended while loadgen still read

	errMu   sync.Mutex
	errs    map[string]int    // "dial <class>" / "drop <class>" → count
	samples map[string]string // class → first example
}

// newFleet returns an empty fleet for n clients whose readers end with
// parent or close.
func newFleet(parent context.Context, n int) *fleet {
	ctx, cancel := context.WithCancel(parent)
	return &fleet{ctx: ctx, cancel: cancel, clients: make([]*wsClient, n), errs: map[string]int{}, samples: map[string]string{}}
}

// noteError counts err under class and keeps the first example.
func (f *fleet) noteError(class string, err error) {
	f.errMu.Lock()
	defer f.errMu.Unlock()
	if f.errs[class]++; f.errs[class] == 1 {
		f.samples[class] = redactURLs(err.Error())
	}
}

// redactURLs shortens the quoted URLs in an error message, whose tickets
// would push the cause out of the table's line.
func redactURLs(msg string) string {
	var b strings.Builder
	for {
		i := strings.Index(msg, `"http://`)
		if i < 0 {
			break
		}
		j := strings.IndexByte(msg[i+1:], '"')
		if j < 0 {
			break
		}
		b.WriteString(msg[:i])
		b.WriteString(`"<url>"`)
		msg = msg[i+j+2:]
	}
	b.WriteString(msg)
	return b.String()
}

// dialResult is what connecting the clients took.
type dialResult struct {
	elapsed   time.Duration
	connected int
	failed    int
	attempted int
	stopped   string // why dialing ended before every client was tried
}

// dialAll connects the clients of cfg, cfg.dialConcurrency at a time, each
// from one of the loopback source addresses in turn, and starts their
// readers. It stops early when ctx ends, maxDialPhase passes, the gateway
// exits or so many dials failed in a row that the rest would fail too (a
// file limit reached: without this, every further dial into a gateway out of
// descriptors would wait for its timeout).
func (f *fleet) dialAll(ctx context.Context, cfg socketsConfig, gw *gatewayProc, events []string, signer *queue.TicketSigner, stderr io.Writer) dialResult {
	release := reserveFDs(reservedFDs)
	defer release()
	maxStreak := int64(max(minFailStreak, 2*cfg.dialConcurrency))
	clients := sourceClients()
	wsBase := "ws" + strings.TrimPrefix(gw.base, "http")
	sem := make(chan struct{}, cfg.dialConcurrency)
	var wg sync.WaitGroup
	start := time.Now()
	stopProgress := startProgressLine(stderr, func() string {
		return fmt.Sprintf("  connect %6.1fs  connected %d/%d  failed %d  status frames %d",
			time.Since(start).Seconds(), f.connected.Load(), cfg.n, f.failed.Load(), f.status.Load())
	})
	attempted, stopped := 0, ""
dial:
	for i := range cfg.n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break dial
		}
		switch {
		case time.Since(start) > maxDialPhase:
			stopped = fmt.Sprintf("%s passed", maxDialPhase)
		case !gw.alive():
			stopped = "ws-gateway exited"
		case f.streak.Load() >= maxStreak:
			stopped = fmt.Sprintf("%d dials failed in a row", f.streak.Load())
		}
		if stopped != "" {
			<-sem
			break
		}
		attempted++
		wg.Go(func() {
			defer func() { <-sem }()
			f.dialOne(ctx, i, wsBase, events, signer, clients[i%len(clients)])
		})
	}
	wg.Wait()
	stopProgress()
	if stopped != "" {
		fmt.Fprintf(stderr, "loadgen: stopped dialing after %d of %d clients: %s\n", attempted, cfg.n, stopped)
	}
	for _, c := range clients {
		c.CloseIdleConnections()
	}
	return dialResult{elapsed: time.Since(start), connected: int(f.connected.Load()), failed: int(f.failed.Load()), attempted: attempted, stopped: stopped}
}

// reserveFDs holds n descriptors open until release is called, so that the
// measurement still has some when the dials used up the file limit.
func reserveFDs(n int) (release func()) {
	files := make([]*os.File, 0, n)
	for range n {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		files = append(files, f)
	}
	return func() {
		for _, f := range files {
			f.Close()
		}
	}
}

// sourceClients returns one HTTP client per loopback source address, so that
// the sockets are not limited to one address's ephemeral ports.
func sourceClients() []*http.Client {
	out := make([]*http.Client, 0, lastSourceHost-firstSourceHost+1)
	for host := firstSourceHost; host <= lastSourceHost; host++ {
		d := &net.Dialer{Timeout: dialTimeout, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(host))}}
		tr := &http.Transport{
			Proxy:              nil,
			DialContext:        d.DialContext,
			DisableCompression: true,
			DisableKeepAlives:  true,
			ForceAttemptHTTP2:  false,
		}
		out = append(out, &http.Client{Transport: tr})
	}
	return out
}

// dialOne connects user i with a fresh ticket and starts its reader.
func (f *fleet) dialOne(ctx context.Context, i int, wsBase string, events []string, signer *queue.TicketSigner, hc *http.Client) {
	user, ev := socketUser(i, events)
	now := time.Now()
	ticket := signer.Sign(queue.Ticket{EventID: ev, UserID: user, JoinedAt: now.UnixMilli(), Expires: now.Add(ticketLifetime).UnixMilli()})
	u := wsBase + "/queue-status/" + url.PathEscape(ev) + "?ticket=" + url.QueryEscape(ticket)
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	ws, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: hc, CompressionMode: websocket.CompressionDisabled})
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			f.failed.Add(1)
			f.streak.Add(1)
			f.noteError("dial "+dialErrorClass(err, resp), err)
		}
		return
	}
	ws.SetReadLimit(clientReadLimit)
	c := &wsClient{ws: ws}
	f.clients[i] = c
	f.connected.Add(1)
	f.streak.Store(0)
	probe := f.probe.CompareAndSwap(false, true)
	connectedMs := time.Now().UnixMilli()
	f.readers.Go(func() { f.read(c, probe, connectedMs) })
}

// dialErrorClass names the kind of a failed handshake.
func dialErrorClass(err error, resp *http.Response) string {
	for _, e := range []struct {
		err  error
		name string
	}{
		{syscall.EMFILE, "too many open files"},
		{syscall.ENFILE, "file table full"},
		{syscall.EADDRNOTAVAIL, "no free source port"},
		{syscall.EADDRINUSE, "address in use"},
		{syscall.ECONNREFUSED, "connection refused"},
		{syscall.ECONNRESET, "connection reset"},
		{context.DeadlineExceeded, "timeout"},
	} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	if resp != nil {
		return "status " + strconv.Itoa(resp.StatusCode)
	}
	return "other"
}

// statusFrameHead is the part of a status frame the clients look at.
type statusFrameHead struct {
	Type string `json:"type"`
	TS   int64  `json:"ts"`
}

// read receives c's frames until its socket ends or the fleet closes. Status
// frames stamped inside the window count for c and the latency histogram.
func (f *fleet) read(c *wsClient, probe bool, connectedMs int64) {
	for {
		typ, data, err := c.ws.Read(f.ctx)
		if err != nil {
			if f.ctx.Err() == nil {
				f.dropped.Add(1)
				f.noteError("drop "+dropClass(err), err)
			}
			return
		}
		arrivedUs := time.Now().UnixMicro()
		var h statusFrameHead
		if typ != websocket.MessageText || json.Unmarshal(data, &h) != nil || h.Type != "status" {
			f.other.Add(1)
			continue
		}
		f.status.Add(1)
		// The probe's greeting arrives within milliseconds of its connect;
		// what comes later is a regular tick, which fixes the tick phase.
		if probe && h.TS >= connectedMs+probeSettle {
			f.probeTick.Store(h.TS)
		}
		end := f.winEnd.Load()
		if end == 0 || f.frozen.Load() || h.TS < f.winStart.Load() || h.TS >= end {
			continue
		}
		c.inWindow.Add(1)
		f.lat.record(arrivedUs - h.TS*1000)
	}
}

// dropClass names the way a socket ended.
func dropClass(err error) string {
	if code := websocket.CloseStatus(err); code != -1 {
		return "close " + strconv.Itoa(int(code))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "eof"
	}
	if errors.Is(err, syscall.ECONNRESET) {
		return "connection reset"
	}
	return "other"
}

// close closes every client socket without a close handshake and waits a
// bounded time for the readers.
func (f *fleet) close(stderr io.Writer) {
	f.cancel()
	for _, c := range f.clients {
		if c != nil {
			_ = c.ws.CloseNow()
		}
	}
	done := make(chan struct{})
	go func() {
		f.readers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(readersStopWait):
		fmt.Fprintf(stderr, "loadgen: client readers did not stop within %s\n", readersStopWait)
	}
}

// sample is one reading of the gateway's and Redis's counters.
type sample struct {
	at      time.Time
	metrics map[string]float64
	redis   map[string]string // INFO stats and cpu
	selfCPU time.Duration
}

// takeSample reads the gateway's metrics, Redis's INFO stats, cpu and
// commandstats (one command), and loadgen's CPU time.
func takeSample(ctx context.Context, gw *gatewayProc, rc *redis.Client) (sample, error) {
	s := sample{at: time.Now(), selfCPU: selfCPU()}
	var err error
	if s.metrics, err = gw.metrics(ctx); err != nil {
		return s, err
	}
	if s.redis, err = redisInfo(ctx, rc, "stats", "cpu", "commandstats"); err != nil {
		return s, err
	}
	return s, nil
}

// redisFloat returns an INFO field as a number, or 0.
func (s sample) redisFloat(key string) float64 {
	v, _ := strconv.ParseFloat(s.redis[key], 64)
	return v
}

// commandStat returns one figure ("calls", "usec") of a command's line in
// INFO commandstats, such as cmdstat_evalsha:calls=3,usec=120,…; 0 when
// absent.
func (s sample) commandStat(command, figure string) float64 {
	for kv := range strings.SplitSeq(s.redis["cmdstat_"+command], ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == figure {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// socketsResult is everything a run measured.
type socketsResult struct {
	cfg                  socketsConfig
	dial                 dialResult
	rssBefore            int64              // gateway, before the first client
	rssAfter             int64              // gateway, once all clients connected
	rssEnd               int64              // gateway, after the window
	idle                 map[string]float64 // gateway metrics before the first client
	gwFDs, selfFDs       int                // open descriptors once all clients connected
	gwNoFile, selfNoFile string             // their soft limits
	measured             bool

	ticks          int
	window         time.Duration
	frames         int64
	missing        int // clients with fewer frames in the window than ticks
	extra          int // clients with more
	droppedInRun   int64
	begin, end     sample
	lat            *latencyHist
	selfRSS        int64
	selfGoroutines int
	otherFrames    int64
	gwLogDropped   int
	errs           map[string]int
	samples        map[string]string
}

// measure aligns a window of whole status intervals on the gateway's tick
// phase, counts the status frames stamped inside it and reads the gateway's
// and Redis's counters at its edges.
func (f *fleet) measure(ctx context.Context, cfg socketsConfig, gw *gatewayProc, rc *redis.Client, res *socketsResult, stderr io.Writer) error {
	res.lat = &f.lat
	phase, err := f.waitTick(ctx, cfg, gw, stderr)
	if err != nil {
		return err
	}
	interval := cfg.interval.Milliseconds()
	res.ticks = cfg.ticks()
	res.window = time.Duration(res.ticks) * cfg.interval
	// The window's edges lie half an interval after a tick, so it holds
	// exactly res.ticks ticks and each has half an interval either side.
	start := phase + interval/2
	for nowMs := time.Now().UnixMilli(); start < nowMs+100; {
		start += interval
	}
	end := start + int64(res.ticks)*interval
	f.winStart.Store(start)
	f.winEnd.Store(end)
	grace := end + interval/2 // the last tick's frames get a whole interval to arrive

	began := time.Now()
	stopProgress := startProgressLine(stderr, func() string {
		now := time.Now().UnixMilli()
		stage := "to window"
		if now >= start {
			stage = fmt.Sprintf("window %5.1fs/%.1fs", float64(min(now, end)-start)/1000, res.window.Seconds())
		}
		return fmt.Sprintf("  measure %6.1fs  %s  frames in window %d  dropped %d",
			time.Since(began).Seconds(), stage, f.lat.count.Load(), f.dropped.Load())
	})
	defer stopProgress()
	if err := sleepUntil(ctx, gw, start); err != nil {
		return err
	}
	if res.begin, err = takeSample(ctx, gw, rc); err != nil {
		return err
	}
	if err := sleepUntil(ctx, gw, end); err != nil {
		return err
	}
	if res.end, err = takeSample(ctx, gw, rc); err != nil {
		return err
	}
	if err := sleepUntil(ctx, gw, grace); err != nil {
		return err
	}
	f.frozen.Store(true)
	stopProgress()

	if res.rssEnd, err = readRSS(gw.pid()); err != nil {
		return err
	}
	res.selfRSS, _ = readRSS(os.Getpid())
	res.selfGoroutines = runtime.NumGoroutine()
	for _, c := range f.clients {
		if c == nil {
			continue
		}
		n := int(c.inWindow.Load())
		res.frames += int64(n)
		switch {
		case n < res.ticks:
			res.missing++
		case n > res.ticks:
			res.extra++
		}
	}
	res.droppedInRun = f.dropped.Load()
	res.otherFrames = f.other.Load()
	res.measured = true
	return nil
}

// collectErrors copies the error counts into res.
func (f *fleet) collectErrors(res *socketsResult) {
	f.errMu.Lock()
	defer f.errMu.Unlock()
	res.errs, res.samples = maps.Clone(f.errs), maps.Clone(f.samples)
}

// waitTick waits until the probe client has seen a regular status tick and
// returns its server stamp (ms).
func (f *fleet) waitTick(ctx context.Context, cfg socketsConfig, gw *gatewayProc, stderr io.Writer) (int64, error) {
	limit := 3*cfg.interval + 10*time.Second
	deadline := time.Now().Add(limit)
	began := time.Now()
	lastPrint := began
	for {
		if ts := f.probeTick.Load(); ts != 0 {
			return ts, nil
		}
		if !gw.alive() {
			return 0, errors.New("ws-gateway exited")
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no status tick reached the probe client within %s", limit)
		}
		if time.Since(lastPrint) >= time.Second {
			fmt.Fprintf(stderr, "  waiting for a status tick %4.1fs\n", time.Since(began).Seconds())
			lastPrint = time.Now()
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sleepUntil waits until the wall clock reaches ms, ctx ends or the gateway
// exits.
func sleepUntil(ctx context.Context, gw *gatewayProc, ms int64) error {
	d := time.Until(time.UnixMilli(ms))
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-gw.exited:
		return errors.New("ws-gateway exited during the measurement")
	}
}

// startProgressLine prints line() to w once a second until the returned stop
// is called; stop may be called more than once.
func startProgressLine(w io.Writer, line func() string) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				fmt.Fprintln(w, line())
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
		})
	}
}

// printSockets prints the sockets table.
func printSockets(w io.Writer, r *socketsResult) {
	d := r.dial
	perSocket := "n/a"
	if d.connected > 0 {
		perSocket = bytesString(float64(r.rssAfter-r.rssBefore) / float64(d.connected))
	}
	fmt.Fprintf(w, "sockets  connected %d/%d  failed %d  dial %.1fs (%.0f/s)  rss before %s after %s  per socket %s\n",
		d.connected, r.cfg.n, d.failed, d.elapsed.Seconds(), float64(d.connected)/max(d.elapsed.Seconds(), 1e-9),
		bytesString(float64(r.rssBefore)), bytesString(float64(r.rssAfter)), perSocket)
	fmt.Fprintf(w, "fds      ws-gateway %d open (limit %s)  loadgen %d open (limit %s)\n", r.gwFDs, r.gwNoFile, r.selfFDs, r.selfNoFile)
	if d.stopped != "" {
		fmt.Fprintf(w, "stopped  dialing after %d of %d clients: %s\n", d.attempted, r.cfg.n, d.stopped)
	}
	if r.measured {
		printStatusRows(w, r)
	}
	for _, class := range slices.Sorted(maps.Keys(r.errs)) {
		fmt.Fprintf(w, "errors   %s: %d, e.g. %s\n", class, r.errs[class], oneLine(r.samples[class]))
	}
}

// printStatusRows prints what the measurement window saw: frames and their
// latency, Redis's and each process's work per tick, and the gateway's
// memory per socket.
func printStatusRows(w io.Writer, r *socketsResult) {
	b, e := r.begin.metrics, r.end.metrics
	delta := func(name string) float64 { return e[name] - b[name] }
	ticks := float64(r.ticks)
	fmt.Fprintf(w, "status   ticks %d (%s)  frames %d (expected %d)  clients missing a tick %d  with extra frames %d  dropped %d  latency p50 %s p99 %s max %s\n",
		r.ticks, r.window, r.frames, int64(r.ticks)*int64(r.dial.connected), r.missing, r.extra, r.droppedInRun,
		ms(r.lat.percentile(0.50)), ms(r.lat.percentile(0.99)), ms(r.lat.max()))

	serverTicks := delta("waitq_status_tick_seconds_count")
	meanTick := "n/a"
	if serverTicks > 0 {
		meanTick = ms(seconds(delta("waitq_status_tick_seconds_sum") / serverTicks))
	}
	// One INFO of loadgen's own (the begin sample's) falls in the window;
	// commands run inside Lua scripts count too.
	cmds := r.end.redisFloat("total_commands_processed") - r.begin.redisFloat("total_commands_processed") - 1
	evals := r.end.commandStat("evalsha", "calls") - r.begin.commandStat("evalsha", "calls")
	evalTime := (r.end.commandStat("evalsha", "usec") - r.begin.commandStat("evalsha", "usec")) / 1e6
	fmt.Fprintf(w, "redis    status round trips/tick %.1f (events %d)  EVALSHA/tick %.1f taking %s  commands/tick %.1f (incl. inside scripts)  mean tick %s (server ticks %.0f)  status errors %.0f\n",
		delta("waitq_status_round_trips_total")/ticks, r.cfg.events, evals/ticks, ms(seconds(evalTime/ticks)),
		cmds/ticks, meanTick, serverTicks, delta("waitq_status_errors_total"))

	secs := r.end.at.Sub(r.begin.at).Seconds()
	gwCPU := delta("process_cpu_seconds_total")
	redisCPU := r.end.redisFloat("used_cpu_sys") + r.end.redisFloat("used_cpu_user") -
		r.begin.redisFloat("used_cpu_sys") - r.begin.redisFloat("used_cpu_user")
	selfCPU := (r.end.selfCPU - r.begin.selfCPU).Seconds()
	fmt.Fprintf(w, "cpu      over %.1fs, %% of one core (%d cores): ws-gateway %.1f%% (%s/tick)  redis-server %.1f%% (%s/tick)  loadgen clients %.1f%% (%s/tick)\n",
		secs, runtime.NumCPU(), 100*gwCPU/secs, ms(seconds(gwCPU/ticks)),
		100*redisCPU/secs, ms(seconds(redisCPU/ticks)), 100*selfCPU/secs, ms(seconds(selfCPU/ticks)))

	sockets := e["waitq_ws_sockets"]
	perSocket := func(name string) float64 { return (e[name] - r.idle[name]) / max(sockets, 1) }
	fmt.Fprintf(w, "gateway  sockets %.0f  goroutines %.0f (%.2f per socket)  per socket heap %s stack %s  rss at end %s  frames sent %.0f  slow closed %.0f\n",
		sockets, e["go_goroutines"], perSocket("go_goroutines"),
		bytesString(perSocket("go_memstats_heap_inuse_bytes")), bytesString(perSocket("go_memstats_stack_inuse_bytes")),
		bytesString(float64(r.rssEnd)), delta("waitq_ws_frames_sent_total"), e["waitq_ws_slow_closed_total"])
	fmt.Fprintf(w, "loadgen  rss %s  goroutines %d  other frames %d  gateway log bytes dropped %d\n",
		bytesString(float64(r.selfRSS)), r.selfGoroutines, r.otherFrames, r.gwLogDropped)

	printSummary(w, fmt.Sprintf("sockets on one ws-gateway, status every %s", r.cfg.interval),
		fmt.Sprintf("%d connected; %d of %d statuses; late p99 %s (arrival − tick stamp)", r.dial.connected, r.frames, int64(r.ticks)*int64(r.dial.connected), ms(r.lat.percentile(0.99))),
		"", 0, 0, "100k on one gateway, p99 late < 1 s")
	printSummary(w, fmt.Sprintf("ws-gateway memory per socket, %d sockets", r.dial.connected),
		fmt.Sprintf("RSS %s (heap %s, stack %s), %.2f goroutines", bytesString(float64(r.rssAfter-r.rssBefore)/max(float64(r.dial.connected), 1)),
			bytesString(perSocket("go_memstats_heap_inuse_bytes")), bytesString(perSocket("go_memstats_stack_inuse_bytes")), perSocket("go_goroutines")),
		"", 0, 0, "≤ 10 KiB per idle socket")
	printSummary(w, fmt.Sprintf("Redis round trips per status tick, %d sockets", r.dial.connected),
		fmt.Sprintf("%.1f for %d event(s)", delta("waitq_status_round_trips_total")/ticks, r.cfg.events),
		"", 0, 0, "grows with events, not sockets")
}

// seconds converts a float number of seconds.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// bytesString formats a size in KiB or MiB.
func bytesString(b float64) string {
	if math.Abs(b) >= 1<<20 {
		return fmt.Sprintf("%.1fMiB", b/(1<<20))
	}
	return fmt.Sprintf("%.1fKiB", b/(1<<10))
}

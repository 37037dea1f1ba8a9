package loadgen

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/tools/loadgen/latency"
	"github.com/waitq/waitq/internal/tools/loadgen/procstat"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
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

	st, err := startInfra(ctx, false)
	if err != nil {
		return err
	}
	defer st.Close()
	rc := st.client
	events := socketEvents(cfg.events)
	if err := seedLines(ctx, rc, kafkajoin.BrokerConfig{Brokers: st.Brokers()}, events, cfg.n, stderr); err != nil {
		return err
	}

	secret := stack.RandomHex(16)
	gw, err := startGateway(ctx, cfg, st, secret, stderr)
	if err != nil {
		return err
	}
	defer gw.stop(stderr)
	fmt.Fprintf(stdout, "target   ws-gateway %s child (pid %d)  redis-server %s child  kfake in-process; admissions off (WAITQ_ADMIT_INTERVAL=1h)%s\n",
		cfg.gatewayBin, gw.Pid(), st.redisVersion(ctx), gw.passedEnv())

	rssBefore, err := procstat.RSS(gw.Pid())
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
	rssAfter, err := procstat.RSS(gw.Pid())
	if err != nil {
		return err
	}
	res := socketsResult{cfg: cfg, dial: dr, rssBefore: rssBefore, rssAfter: rssAfter, idle: idle,
		gwFDs: procstat.OpenFDs(gw.Pid()), gwNoFile: procstat.NoFileLimit(gw.Pid()), selfFDs: procstat.OpenFDs(os.Getpid()), selfNoFile: procstat.NoFileLimit(os.Getpid())}
	if dr.connected == 0 {
		err = errors.New("no client connected")
	} else {
		if err = fl.measure(ctx, cfg, gw, rc, &res, stderr); err != nil {
			err = fmt.Errorf("measure: %w", err)
		}
	}
	fl.collectErrors(&res)
	res.gwLogDropped = gw.Dropped()
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
func seedLines(ctx context.Context, rc redis.UniversalClient, conn kafkajoin.BrokerConfig, events []string, n int, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	store, err := redisstore.New(rc, redisstore.Options{})
	if err != nil {
		return err
	}
	evs := make([]queue.Event, len(events))
	for i, ev := range events {
		evs[i] = queue.Event{ID: ev, Capacity: 10, HoldSeconds: 3600, State: queue.StateOpen, Partitions: 1}
	}
	if err := putEvents(ctx, store, conn, evs...); err != nil {
		return fmt.Errorf("seed: %w", err)
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

// sample is one reading of the gateway's and Redis's counters.
type sample struct {
	at      time.Time
	metrics map[string]float64
	redis   map[string]string // INFO stats and cpu
	selfCPU time.Duration
}

// takeSample reads the gateway's metrics, Redis's INFO stats, cpu and
// commandstats (one command), and loadgen's CPU time.
func takeSample(ctx context.Context, gw *gatewayProc, rc redis.UniversalClient) (sample, error) {
	s := sample{at: time.Now(), selfCPU: procstat.SelfCPU()}
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
	quietMs        int64 // the longest stretch of the interval with no frame stamped; 0 when not read
	window         time.Duration
	frames         int64
	missing        int // clients with fewer frames in the window than ticks
	extra          int // clients with more
	droppedInRun   int64
	begin, end     sample
	lat            *latency.Hist
	selfRSS        int64
	selfGoroutines int
	otherFrames    int64
	gwLogDropped   int
	errs           tally
}

// measure aligns a window of whole status intervals on the gateway's tick
// phase, counts the status frames stamped inside it and reads the gateway's
// and Redis's counters at its edges.
func (f *fleet) measure(ctx context.Context, cfg socketsConfig, gw *gatewayProc, rc redis.UniversalClient, res *socketsResult, stderr io.Writer) error {
	res.lat = &f.lat
	f.intervalMs.Store(cfg.interval.Milliseconds())
	phase, err := f.waitTick(ctx, cfg, gw, stderr)
	if err != nil {
		return err
	}
	interval := cfg.interval.Milliseconds()
	res.ticks = cfg.ticks()
	res.window = time.Duration(res.ticks) * cfg.interval
	// The window's edges lie in the middle of the longest stretch of the
	// interval in which no frame is stamped (watched for one interval), so
	// it holds exactly res.ticks rounds however the gateway spreads them;
	// without that reading, half an interval after the probe's tick.
	edge := phase + interval/2
	f.clearPhases()
	if err := sleepUntil(ctx, gw, time.Now().Add(cfg.interval+cfg.interval/10).UnixMilli()); err != nil {
		return err
	}
	if quiet, length, ok := f.quietPhase(); ok {
		edge = quiet
		res.quietMs = length
	}
	start := edge
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
			time.Since(began).Seconds(), stage, f.lat.Count(), f.dropped.Load())
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

	if res.rssEnd, err = procstat.RSS(gw.Pid()); err != nil {
		return err
	}
	res.selfRSS, _ = procstat.RSS(os.Getpid())
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
	res.errs = newTally()
	res.errs.addAll(f.errs)
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
		if !gw.Running() {
			return 0, errors.New("ws-gateway exited")
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no status tick reached the probe client within %s", limit)
		}
		if time.Since(lastPrint) >= time.Second {
			fmt.Fprintf(stderr, "  waiting for a status tick %4.1fs\n", time.Since(began).Seconds())
			lastPrint = time.Now()
		}
		if !clock.Sleep(ctx, 20*time.Millisecond) {
			return 0, ctx.Err()
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
	case <-gw.Exited():
		return errors.New("ws-gateway exited during the measurement")
	}
}

// printSockets prints the sockets table.
func printSockets(w io.Writer, r *socketsResult) {
	d := r.dial
	perSocket := "n/a"
	if d.connected > 0 {
		perSocket = report.Bytes(float64(r.rssAfter-r.rssBefore) / float64(d.connected))
	}
	fmt.Fprintf(w, "sockets  connected %d/%d  failed %d  dial %.1fs (%.0f/s)  rss before %s after %s  per socket %s\n",
		d.connected, r.cfg.n, d.failed, d.elapsed.Seconds(), float64(d.connected)/max(d.elapsed.Seconds(), 1e-9),
		report.Bytes(float64(r.rssBefore)), report.Bytes(float64(r.rssAfter)), perSocket)
	fmt.Fprintf(w, "fds      ws-gateway %d open (limit %s)  loadgen %d open (limit %s)\n", r.gwFDs, r.gwNoFile, r.selfFDs, r.selfNoFile)
	if d.stopped != "" {
		fmt.Fprintf(w, "stopped  dialing after %d of %d clients: %s\n", d.attempted, r.cfg.n, d.stopped)
	}
	if r.measured {
		printStatusRows(w, r)
	}
	r.errs.print(w, "errors   ")
}

// printStatusRows prints what the measurement window saw: frames and their
// latency, Redis's and each process's work per tick, and the gateway's
// memory per socket.
func printStatusRows(w io.Writer, r *socketsResult) {
	b, e := r.begin.metrics, r.end.metrics
	delta := func(name string) float64 { return e[name] - b[name] }
	ticks := float64(r.ticks)
	fmt.Fprintf(w, "status   ticks %d (%s)  frames %d (expected %d)  clients missing a tick %d  with extra frames %d  dropped %d  latency p50 %s p99 %s max %s  (window edges %d ms into a %d ms stretch with no frames)\n",
		r.ticks, r.window, r.frames, int64(r.ticks)*int64(r.dial.connected), r.missing, r.extra, r.droppedInRun,
		report.Millis(r.lat.Percentile(0.50)), report.Millis(r.lat.Percentile(0.99)), report.Millis(r.lat.Max()), r.quietMs/2, r.quietMs)

	serverTicks := delta("waitq_status_tick_seconds_count")
	meanTick := "n/a"
	if serverTicks > 0 {
		meanTick = report.Millis(seconds(delta("waitq_status_tick_seconds_sum") / serverTicks))
	}
	// One INFO of loadgen's own (the begin sample's) falls in the window;
	// commands run inside Lua scripts count too.
	cmds := r.end.redisFloat("total_commands_processed") - r.begin.redisFloat("total_commands_processed") - 1
	evals := r.end.commandStat("evalsha", "calls") - r.begin.commandStat("evalsha", "calls")
	evalTime := (r.end.commandStat("evalsha", "usec") - r.begin.commandStat("evalsha", "usec")) / 1e6
	fmt.Fprintf(w, "redis    status round trips/tick %.1f (events %d)  EVALSHA/tick %.1f taking %s  commands/tick %.1f (incl. inside scripts)  mean slice %s (server slices %.0f)  status errors %.0f\n",
		delta("waitq_status_round_trips_total")/ticks, r.cfg.events, evals/ticks, report.Millis(seconds(evalTime/ticks)),
		cmds/ticks, meanTick, serverTicks, delta("waitq_status_errors_total"))

	secs := r.end.at.Sub(r.begin.at).Seconds()
	gwCPU := delta("process_cpu_seconds_total")
	redisCPU := r.end.redisFloat("used_cpu_sys") + r.end.redisFloat("used_cpu_user") -
		r.begin.redisFloat("used_cpu_sys") - r.begin.redisFloat("used_cpu_user")
	selfCPU := (r.end.selfCPU - r.begin.selfCPU).Seconds()
	fmt.Fprintf(w, "cpu      over %.1fs, %% of one core (%d cores): ws-gateway %.1f%% (%s/tick)  redis-server %.1f%% (%s/tick)  loadgen clients %.1f%% (%s/tick)\n",
		secs, runtime.NumCPU(), 100*gwCPU/secs, report.Millis(seconds(gwCPU/ticks)),
		100*redisCPU/secs, report.Millis(seconds(redisCPU/ticks)), 100*selfCPU/secs, report.Millis(seconds(selfCPU/ticks)))

	sockets := e["waitq_ws_sockets"]
	perSocket := func(name string) float64 { return (e[name] - r.idle[name]) / max(sockets, 1) }
	fmt.Fprintf(w, "gateway  sockets %.0f  goroutines %.0f (%.2f per socket)  per socket heap %s stack %s  rss at end %s  frames sent %.0f  slow closed %.0f\n",
		sockets, e["go_goroutines"], perSocket("go_goroutines"),
		report.Bytes(perSocket("go_memstats_heap_inuse_bytes")), report.Bytes(perSocket("go_memstats_stack_inuse_bytes")),
		report.Bytes(float64(r.rssEnd)), delta("waitq_ws_frames_sent_total"), e["waitq_ws_slow_closed_total"])
	fmt.Fprintf(w, "loadgen  rss %s  goroutines %d  other frames %d  gateway log bytes dropped %d\n",
		report.Bytes(float64(r.selfRSS)), r.selfGoroutines, r.otherFrames, r.gwLogDropped)
	// The same figures in plain units, one line, for scripts that fit them
	// against the socket count (scripts/bench-gateway.sh's projection).
	fmt.Fprintf(w, "data     sockets=%d rss_per_socket_bytes=%.0f heap_per_socket_bytes=%.0f stack_per_socket_bytes=%.0f goroutines_per_socket=%.3f gateway_cpu_per_tick_ms=%.1f late_p99_ms=%.1f\n",
		r.dial.connected, float64(r.rssAfter-r.rssBefore)/max(float64(r.dial.connected), 1),
		perSocket("go_memstats_heap_inuse_bytes"), perSocket("go_memstats_stack_inuse_bytes"), perSocket("go_goroutines"),
		1000*gwCPU/ticks, float64(r.lat.Percentile(0.99))/float64(time.Millisecond))

	report.Summary(w, fmt.Sprintf("%s on one ws-gateway, status every %s", r.cfg.clients(), r.cfg.interval),
		fmt.Sprintf("%d connected; %d of %d statuses; late p99 %s (arrival − tick stamp)", r.dial.connected, r.frames, int64(r.ticks)*int64(r.dial.connected), report.Millis(r.lat.Percentile(0.99))),
		"", 0, 0, "p99 late < 250 ms at 19.5k")
	report.Summary(w, fmt.Sprintf("ws-gateway memory per %s, %d %s", r.cfg.client(), r.dial.connected, r.cfg.clients()),
		fmt.Sprintf("RSS %s (heap %s, stack %s), %.2f goroutines", report.Bytes(float64(r.rssAfter-r.rssBefore)/max(float64(r.dial.connected), 1)),
			report.Bytes(perSocket("go_memstats_heap_inuse_bytes")), report.Bytes(perSocket("go_memstats_stack_inuse_bytes")), perSocket("go_goroutines")),
		"", 0, 0, "≤ 10 KiB per idle socket")
	report.Summary(w, fmt.Sprintf("Redis round trips per status interval, %d %s", r.dial.connected, r.cfg.clients()),
		fmt.Sprintf("%.1f for %d event(s)", delta("waitq_status_round_trips_total")/ticks, r.cfg.events),
		"", 0, 0, "grows with events (≤ 16 each), not sockets")
}

// seconds converts a float number of seconds.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

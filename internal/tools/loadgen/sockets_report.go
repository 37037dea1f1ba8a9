package loadgen

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/waitq/waitq/internal/tools/loadgen/procstat"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// printDial prints, after a blank line, what connecting the clients took:
// the clients and the gateway's memory for them, the descriptors open, and
// why dialing stopped early.
func (f *fleet) printDial(w io.Writer, rssBefore, rssAfter int64) {
	n := f.connected.Load()
	perSocket := "n/a"
	if n > 0 {
		perSocket = report.Bytes(float64(rssAfter-rssBefore) / float64(n))
	}
	fmt.Fprintf(w, "\nsockets  connected %d/%d  failed %d  dial %.1fs (%.0f/s)  rss before %s after %s  per socket %s\n",
		n, f.cfg.n, f.failed.Load(), f.dialTime.Seconds(), float64(n)/max(f.dialTime.Seconds(), 1e-9),
		report.Bytes(float64(rssBefore)), report.Bytes(float64(rssAfter)), perSocket)
	gw, self := f.gw.Pid(), os.Getpid()
	fmt.Fprintf(w, "fds      ws-gateway %d open (limit %s)  loadgen %d open (limit %s)\n",
		procstat.OpenFDs(gw), procstat.NoFileLimit(gw), procstat.OpenFDs(self), procstat.NoFileLimit(self))
	if f.stopped != "" {
		fmt.Fprintf(w, "stopped  dialing after %d of %d clients: %s\n", n+f.failed.Load(), f.cfg.n, f.stopped)
	}
}

// printWindow prints what the measurement window saw: frames and their
// latency, Redis's and each process's work per tick, the gateway's memory
// per client (idle: its metrics before the first; rssPer: its RSS growth
// per client) and loadgen's own figures.
func (f *fleet) printWindow(w io.Writer, win window, idle map[string]float64, rssPer float64) {
	b, e := win.begin.m, win.end.m
	delta := func(name string) float64 { return e[name] - b[name] }
	ticks, connected := float64(win.ticks), f.connected.Load()
	expected := int64(win.ticks) * connected
	p99 := f.lat.Percentile(0.99)
	fmt.Fprintf(w, "status   ticks %d (%s)  frames %d (expected %d)  clients missing a tick %d  with extra frames %d  dropped %d  latency p50 %s p99 %s max %s  (window edges %d ms into a %d ms stretch with no frames)\n",
		win.ticks, time.Duration(win.ticks)*f.cfg.interval, win.frames, expected, win.missing, win.extra, f.dropped.Load(),
		report.Millis(f.lat.Percentile(0.50)), report.Millis(p99), report.Millis(f.lat.Max()), win.quietMs/2, win.quietMs)

	slices := delta("waitq_status_tick_seconds_count")
	meanSlice := "n/a"
	if slices > 0 {
		meanSlice = report.Millis(seconds(delta("waitq_status_tick_seconds_sum") / slices))
	}
	roundTrips := delta("waitq_status_round_trips_total") / ticks
	// One INFO of loadgen's own (the begin sample's) falls in the window;
	// commands run inside Lua scripts count too.
	fmt.Fprintf(w, "redis    status round trips/tick %.1f (events %d)  EVALSHA/tick %.1f taking %s  commands/tick %.1f (incl. inside scripts)  mean slice %s (server slices %.0f)  status errors %.0f\n",
		roundTrips, f.cfg.events, delta("redis_evalsha_calls")/ticks, report.Millis(seconds(delta("redis_evalsha_seconds")/ticks)),
		(delta("redis_commands")-1)/ticks, meanSlice, slices, delta("waitq_status_errors_total"))

	secs := win.end.at.Sub(win.begin.at).Seconds()
	cpu := func(name string) string {
		return fmt.Sprintf("%.1f%% (%s/tick)", 100*delta(name)/secs, report.Millis(seconds(delta(name)/ticks)))
	}
	fmt.Fprintf(w, "cpu      over %.1fs, %% of one core (%d cores): ws-gateway %s  redis-server %s  loadgen clients %s\n",
		secs, runtime.NumCPU(), cpu("process_cpu_seconds_total"), cpu("redis_cpu_seconds"), cpu("loadgen_cpu_seconds"))

	rssEnd, _ := procstat.RSS(f.gw.Pid())
	sockets := e["waitq_ws_sockets"]
	perSocket := func(name string) float64 { return (e[name] - idle[name]) / max(sockets, 1) }
	heap, stack, goroutines := perSocket("go_memstats_heap_inuse_bytes"), perSocket("go_memstats_stack_inuse_bytes"), perSocket("go_goroutines")
	fmt.Fprintf(w, "gateway  sockets %.0f  goroutines %.0f (%.2f per socket)  per socket heap %s stack %s  rss at end %s  frames sent %.0f  slow closed %.0f\n",
		sockets, e["go_goroutines"], goroutines, report.Bytes(heap), report.Bytes(stack),
		report.Bytes(float64(rssEnd)), delta("waitq_ws_frames_sent_total"), e["waitq_ws_slow_closed_total"])
	selfRSS, _ := procstat.RSS(os.Getpid())
	fmt.Fprintf(w, "loadgen  rss %s  goroutines %d  other frames %d  gateway log bytes dropped %d\n",
		report.Bytes(float64(selfRSS)), runtime.NumGoroutine(), f.other.Load(), f.gw.Discarded())
	// The same figures in plain units, one line, for scripts that fit them
	// against the socket count (scripts/bench-gateway.sh's projection).
	fmt.Fprintf(w, "data     sockets=%d rss_per_socket_bytes=%.0f heap_per_socket_bytes=%.0f stack_per_socket_bytes=%.0f goroutines_per_socket=%.3f gateway_cpu_per_tick_ms=%.1f late_p99_ms=%.1f\n",
		connected, rssPer, heap, stack, goroutines, 1000*delta("process_cpu_seconds_total")/ticks, float64(p99)/float64(time.Millisecond))

	report.Summary(w, fmt.Sprintf("%s on one ws-gateway, status every %s", f.cfg.clients(), f.cfg.interval),
		fmt.Sprintf("%d connected; %d of %d statuses; late p99 %s (arrival − tick stamp)", connected, win.frames, expected, report.Millis(p99)),
		"", 0, 0, "p99 late < 250 ms at 19.5k")
	report.Summary(w, fmt.Sprintf("ws-gateway memory per %s, %d %s", f.cfg.client(), connected, f.cfg.clients()),
		fmt.Sprintf("RSS %s (heap %s, stack %s), %.2f goroutines", report.Bytes(rssPer), report.Bytes(heap), report.Bytes(stack), goroutines),
		"", 0, 0, "≤ 10 KiB per idle socket")
	report.Summary(w, fmt.Sprintf("Redis round trips per status interval, %d %s", connected, f.cfg.clients()),
		fmt.Sprintf("%.1f for %d event(s)", roundTrips, f.cfg.events), "", 0, 0, "grows with events (≤ 16 each), not sockets")
}

// seconds converts a float number of seconds.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

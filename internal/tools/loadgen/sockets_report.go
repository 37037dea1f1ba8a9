package loadgen

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

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

// Command loadgen measures the join path and the status path on this machine
// and prints the numbers as a small plain-text table:
//
//	loadgen ingest  messages/s the ingest consumer writes into Redis next to
//	                raw pipelined ZADDs
//	loadgen lag     join → visible-in-line lag at a fixed offered rate
//	                through producer-api, the broker and the ingest consumer
//	loadgen sockets WebSockets (or SSE streams, -transport sse) one
//	                ws-gateway process holds with every status frame on
//	                time, its memory per socket, Redis round trips per
//	                status tick
//	loadgen admit   join → admitted frame and release → next admitted frame,
//	                fast track on and off
//	loadgen guard    pages/s of admitted clients (each with its entry cookie)
//	                through waitq-guard next to the same clients straight to
//	                the origin
//	loadgen adaptive visitors who join, wait and visit the demo shop through
//	                waitq-guard, once with the admission rate following the
//	                guard's health reports and once at a fixed rate; writes
//	                a chart (bench/adaptive.svg) and the samples (CSV)
//	loadgen attack  a script taking places in a line: places a minute and
//	                solver CPU-seconds a place with no challenge, each
//	                difficulty, and join tokens required
//	loadgen statuses Redis CPU per waiting user and status round, and Redis
//	                bytes per waiting user, for one event of -waiting users
//	                in a Redis given by -redis (issue 30's measurement)
//	loadgen sale    a whole sale in the Redis given by -redis: -joins
//	                people join as fast as the ingest path takes them,
//	                simulated gateways tell them their places every
//	                interval, admission at a rate until the line drained
//	loadgen turns   a sale in simulated time in the Redis given by -redis:
//	                people step away, some for good, some admitted never
//	                reach the shop; the shop's occupancy, turns lost by
//	                people back in time, the estimate's error
//	loadgen cost    CPU time per join of each program, each a process of
//	                its own (producer-api, ingest-consumer, redis-server, the
//	                kfake broker), against a baseline program doing the same
//	                job with nothing else (loadgen baseline producer|ingest,
//	                which cost starts), alternating rounds
//
// Except for statuses, sale and turns, which use the Redis their -redis names (and
// delete their event afterwards), every part runs on this machine by
// default: an in-process kfake broker, a redis-server child process on a
// free loopback port (guard: the
// origin, the keys and waitq-guard in-process; admit and adaptive: every
// service in-process); sockets starts a ws-gateway binary as a child
// process, and all their traffic stays on the loopback network
// 127.0.0.0/8. Every loop is bounded in count and in time; Ctrl-C stops the
// run and cleans up. The numbers are measurements for a report, not
// pass/fail assertions. The measurements live in internal/tools/loadgen;
// this file only wires them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/waitq/waitq/internal/tools/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "loadgen: %v\n", err)
		stop()
		os.Exit(1)
	}
}

// command is one subcommand: its name, what runs it and its line of help.
type command struct {
	name string
	run  func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	help string
}

// commands returns the subcommands in the order the usage lists them.
func commands() []command {
	return []command{
		{"ingest", loadgen.RunIngest, "messages/s the ingest consumer writes into Redis"},
		{"lag", loadgen.RunLag, "join → visible-in-line lag at a fixed offered rate"},
		{"sockets", loadgen.RunSockets, "WebSockets (or SSE streams) one ws-gateway holds with status frames on time"},
		{"admit", loadgen.RunAdmit, "join → admitted and release → next admitted, fast track on and off"},
		{"guard", loadgen.RunGuard, "pages/s of admitted clients through waitq-guard next to the origin"},
		{"adaptive", loadgen.RunAdaptive, "adaptive admission against a fixed rate at a shop of unknown capacity; a chart"},
		{"attack", loadgen.RunAttack, "places a script takes a minute, and their price, with no challenge, each difficulty, join tokens"},
		{"statuses", loadgen.RunStatuses, "Redis CPU per waiting user and status round, and bytes per waiting user, in the Redis given"},
		{"sale", loadgen.RunSale, "a whole sale in the Redis given: joins, statuses every interval, admission at a rate, drained"},
		{"turns", loadgen.RunTurns, "a sale in simulated time where people step away and buyers never come: occupancy, lost turns, the estimate's error"},
		{"cost", loadgen.RunCost, "CPU per join of each program in a process of its own (producer-api, ingest-consumer, Redis, the broker) against a baseline program doing the same job"},
		{"baseline", loadgen.RunBaseline, "cost's baseline programs (producer|ingest), run by cost as child processes"},
	}
}

// usage returns the text listing the subcommands.
func usage(cmds []command) string {
	var b strings.Builder
	b.WriteString("usage: loadgen <command> [flags]\n\ncommands:\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.help)
	}
	b.WriteString("\nRun \"loadgen <command> -h\" for the command's flags.\n")
	return b.String()
}

// run dispatches to a subcommand. Results go to stdout; progress and
// warnings go to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmds := commands()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage(cmds))
		return errors.New("no command given")
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage(cmds))
		return nil
	default:
		fmt.Fprint(stderr, usage(cmds))
		return fmt.Errorf("unknown command %q", args[0])
	}
}

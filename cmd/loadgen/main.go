// Command loadgen measures the join path and the status path on this machine
// and prints the numbers as a small plain-text table:
//
//	loadgen joins   joins/s through producer-api next to a bare echo handler
//	loadgen ingest  messages/s the ingest consumer writes into Redis next to
//	                raw pipelined ZADDs
//	loadgen lag     join → visible-in-line lag at a fixed offered rate
//	                through producer-api, the broker and the ingest consumer
//	loadgen sockets WebSockets one ws-gateway process holds with every status
//	                frame on time, its memory per socket, Redis round trips
//	                per status tick
//
// By default every part runs on this machine: an in-process kfake broker, a
// redis-server child process on a free loopback port and, for joins,
// producer-api in-process; sockets starts a ws-gateway binary as a child
// process. All traffic stays on the loopback network 127.0.0.0/8. Every loop
// is bounded in count and in time; Ctrl-C stops the run and cleans up. The
// numbers are measurements for a report, not pass/fail assertions.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
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

const usage = `usage: loadgen <command> [flags]

commands:
  joins   joins/s through producer-api next to a bare echo handler
  ingest  messages/s the ingest consumer writes into Redis
  lag     join → visible-in-line lag at a fixed offered rate
  sockets WebSockets one ws-gateway holds with status frames on time

Run "loadgen <command> -h" for the command's flags.
`

// run dispatches to a subcommand. Results go to stdout; progress and
// warnings go to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "joins":
		return runJoins(ctx, args[1:], stdout, stderr)
	case "ingest":
		return runIngest(ctx, args[1:], stdout, stderr)
	case "lag":
		return runLag(ctx, args[1:], stdout, stderr)
	case "sockets":
		return runSockets(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

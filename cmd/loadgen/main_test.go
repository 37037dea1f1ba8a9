package main

import (
	"bytes"
	"context"
	"testing"
)

// TestUsage pins the usage text the table of commands produces.
func TestUsage(t *testing.T) {
	const want = `usage: loadgen <command> [flags]

commands:
  ingest   messages/s the ingest consumer writes into Redis
  lag      join → visible-in-line lag at a fixed offered rate
  sockets  WebSockets (or SSE streams) one ws-gateway holds with status frames on time
  admit    join → admitted and release → next admitted, fast track on and off
  guard    pages/s of admitted clients through waitq-guard next to the origin
  adaptive adaptive admission against a fixed rate at a shop of unknown capacity; a chart
  attack   places a script takes a minute, and their price, with no challenge, each difficulty, join tokens
  statuses Redis CPU per waiting user and status round, and bytes per waiting user, in the Redis given
  sale     a whole sale in the Redis given: joins, statuses every interval, admission at a rate, drained
  turns    a sale in simulated time where people step away and buyers never come: occupancy, lost turns, the estimate's error
  cost     CPU per join of each program in a process of its own (producer-api, ingest-consumer, Redis, the broker) against a baseline program doing the same job
  baseline cost's baseline programs (producer|ingest), run by cost as child processes

Run "loadgen <command> -h" for the command's flags.
`
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"help"}, &stdout, &stderr); err != nil || stdout.String() != want {
		t.Fatalf("help: %v\n%s", err, stdout.String())
	}
	stdout.Reset()
	if err := run(context.Background(), []string{"nope"}, &stdout, &stderr); err == nil || err.Error() != `unknown command "nope"` || stderr.String() != want {
		t.Fatalf("unknown command: %v\n%s", err, stderr.String())
	}
	stderr.Reset()
	if err := run(context.Background(), nil, &stdout, &stderr); err == nil || stderr.String() != want {
		t.Fatalf("no command: %v", err)
	}
	if err := run(context.Background(), []string{"ingest", "-h"}, &stdout, &stderr); err != nil || stdout.Len() != 0 {
		t.Fatalf("ingest -h: %v, stdout %q", err, stdout.String())
	}
}

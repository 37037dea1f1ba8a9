// Package loadgen holds the measurements of cmd/loadgen, each in files
// named for it (a large one split by concern: its settings, the stack it
// starts, its clients, its measuring and its report):
// joins (joins/s through producer-api next to a bare echo handler and a bare
// Kafka writer), ingest (messages/s of the ingest consumer next to raw
// pipelined ZADDs), lag (join → visible-in-line lag at a fixed offered rate)
// sockets (WebSockets, or SSE streams, one ws-gateway process holds with
// every status frame on time), admit (join → admitted, release → next admitted), guard
// (pages/s of admitted clients through waitq-guard next to the origin),
// adaptive (visitors at the demo shop through waitq-guard, the admission
// rate following the guard's health reports against a fixed rate; it also
// writes a chart and the samples, adaptive_report.go, drawn with package
// internal/tools/svgchart), attack (places a script takes, and their price)
// and statuses (issue 30's measurement, against the Redis it is given: the
// server's CPU per waiting user and status round, read as a gateway's round
// reads through package gateway's one door for it, gateway.Rounds, and its
// memory per waiting user; it prints one line and no table), sale (a
// whole sale in the Redis it is given), turns (a sale in simulated time where
// people step away) and cost (the CPU a join costs each program, each a
// process of its own, against the baseline programs of cost_baseline.go,
// which RunBaseline runs as loadgen's own child processes). Each Run function takes the
// subcommand's flags, prints its table to stdout and its progress to
// stderr; the rows
// scripts/bench*.sh parse (summary, joins, sockets, status) keep their
// format.
//
// Everything a measurement starts in this process or as a redis-server
// child comes from internal/stack. The pieces the measurements share have
// files of their own: the harness of every command's settings (flags.go:
// a config declares each flag once, with its bounds, which checks it and
// writes the settings line of the table's head), the one way each starts
// its stack (startStack): the kfake broker and redis-server (or, for joins
// and ingest with -redis-cluster, a Redis Cluster of three) and what they
// read of it (infra.go), and producer-api, ingest-consumer and ws-gateways
// in this process over them (services.go), the bench event (event.go), the
// ws-gateway child process (gateway.go,
// on internal/stack/svcproc), the closed-loop HTTP workers (workers.go), a
// user's calls: join, wait for the admitted frame, release (usercalls.go),
// waiting until a condition holds (poll.go), progress lines (progress.go)
// and failures by class (tally.go). Latency records,
// /proc readers and the report's lines are the subpackages latency, procstat
// and report.
//
// Everything a measurement starts stays on this machine and is stopped
// before its Run returns; every loop is bounded in count and in time. The Run
// functions keep nothing between calls and may run concurrently, but
// sockets reports figures of the whole process (its CPU time, memory and
// descriptors, and it raises the open-file limit), so it measures best alone.
package loadgen

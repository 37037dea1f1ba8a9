// Package loadgen holds the measurements of cmd/loadgen (its doc lists
// them), each in files named for it: a Run function takes the subcommand's
// flags, prints its table to stdout and its progress to stderr; the rows
// scripts/bench*.sh parse (summary, joins, sockets, status, data) keep their
// format.
//
// The pieces the measurements share have files of their own, one mechanism
// each: the settings (flags.go: a config declares each flag once, with its
// bounds, which checks it and writes the settings line of the table's
// head), the stack (stack.go: a stackSpec names the broker, the Redis and
// the services a measurement runs in this process or as child processes,
// all from internal/stack), what Redis says of itself (redisinfo.go), the
// bench event (event.go), the closed-loop HTTP workers and their rows
// (workers.go), a user's calls (usercalls.go), waiting for a condition
// (poll.go), progress lines (progress.go), failures by class (tally.go) and
// alternating rounds with their median (rounds.go). Latency records, /proc
// readers and the report's lines are the subpackages latency, procstat and
// report; adaptive's chart is drawn with internal/tools/svgchart.
//
// Everything a measurement starts stays on this machine and is stopped
// before its Run returns; every loop is bounded in count and in time. The Run
// functions keep nothing between calls and may run concurrently, but
// sockets reports figures of the whole process (its CPU time, memory and
// descriptors, and it raises the open-file limit), so it measures best alone.
package loadgen

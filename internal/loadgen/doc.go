// Package loadgen holds the measurements of cmd/loadgen, one file each:
// joins (joins/s through producer-api next to a bare echo handler and a bare
// Kafka writer), ingest (messages/s of the ingest consumer next to raw
// pipelined ZADDs), lag (join → visible-in-line lag at a fixed offered rate)
// and sockets (WebSockets one ws-gateway process holds with every status
// frame on time). Each Run function takes the subcommand's flags, prints its
// table to stdout and its progress to stderr; the rows scripts/bench*.sh
// parse (summary, joins, sockets, status) keep their format.
//
// Everything a measurement starts stays on this machine and is stopped
// before its Run returns; every loop is bounded in count and in time. The
// Run functions may run concurrently with each other; the values inside one
// run are not shared.
package loadgen

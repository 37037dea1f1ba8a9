// Package gateway is ws-gateway: it serves /queue-status/{eventId} over
// WebSocket (and the same frames as server-sent events at
// /v1/events/{eventId}/stream), pushes each connected user's place and the
// total every status interval, and runs the slot monitor, whose ticks admit
// users through the admission step (redisstore.Store.Tick).
//
// Connections live in a sharded hub. A status round reads the connected
// users one slice of the hub at a time, spread over part of the interval,
// with one pipelined Redis round trip per event and slice, so round trips
// grow with events, not sockets. A socket keeps one goroutine, its reader:
// its frames are written by a bounded pool of write workers, a frame that
// comes during a write waits behind it (a few at most), and a watchdog
// aborts a write that takes too long, so a reader too slow to keep up is
// closed with 1008 and never delays the others. The disconnect grace rests
// on a presence record in Redis that every gateway refreshes, so a user who
// reconnects to any gateway keeps their place. A Server is safe for
// concurrent use.
//
// One file per concern: server.go (configuration, dependencies, routes,
// Run), socket.go (the upgrade, the identity of a request, the socket's
// reader, buffers and transport, the client-frame limit), sse.go (the event
// stream: its handler and transport), conn.go (one
// subscription: its frames in order, closing, keep-alives, the write
// watchdog), writers.go (the write workers), hub.go (the sockets by user,
// in slices), round.go (what a status round does with Redis: the slicing,
// the slices' pacing and the reads, exported for loadgen statuses),
// status.go (greetings, status rounds and polls), monitor.go
// (the slot monitor's ticks, and notifyAdmitted's callers), actions.go (leave and release over
// WebSocket and HTTP), entry.go (entry tokens: verify and the JWKS),
// frames.go (the frames and states of the contract).
package gateway

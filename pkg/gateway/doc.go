// Package gateway is ws-gateway: it serves /queue-status/{eventId} over
// WebSocket (and the same frames as server-sent events at
// /v1/events/{eventId}/stream), pushes each connected user's place and the
// total on every status tick, and runs the slot monitor that admits users
// with the admit script.
//
// Connections live in a sharded hub. A status tick reads every connected
// user of an event with one pipelined Redis round trip, so round trips grow
// with events, not sockets. Each socket has a bounded send queue and a write
// timeout: a reader too slow to keep up is closed with 1008 and never delays
// the others. The disconnect grace rests on a presence record in Redis that
// every gateway refreshes, so a user who reconnects to any gateway keeps
// their place. A Server is safe for concurrent use.
//
// One file per concern: server.go (configuration, dependencies, routes,
// Run), socket.go (the upgrade, the identity of a request, the socket's
// buffers), sse.go (the event stream: its handler and transport), conn.go (one socket: send queue, writer, reader, the write
// watchdog), hub.go (the sockets by user), status.go (greetings, status
// ticks and polls), monitor.go (the slot monitor's admission ticks),
// actions.go (leave and release over WebSocket and HTTP), entry.go (entry
// tokens: verify and the JWKS), frames.go (the frames and states of the
// contract).
package gateway

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
// One file per concern:
//
// The server and its connections
//   - server.go: configuration, dependencies, routes, Run and its loops
//   - socket.go: the upgrade, a request's identity, the socket's reader and transport
//   - sse.go: the event stream, its handler and transport
//   - conn.go: one subscription: its frames in order, closing, keep-alives, the watchdog
//   - writers.go: the write workers that write every frame
//   - hub.go: the sockets by user, sharded, in slices
//   - listener.go: the accepted sockets' kernel send buffer
//
// Statuses
//   - status.go: greetings, status rounds and polls, the status frame
//   - round.go: a round's slicing, pacing and reads; Rounds, the door a measurement reads through
//   - tracker.go: the tracker, users' places kept from the line's journal
//   - journal.go: the journal's elements parsed, and their changes counted
//   - presence.go: the presence the tracker takes and lets go
//   - eta.go: the wait a status frame estimates
//   - rate.go: each event's measured admission rate and the pace the ETA assumes; the Teller
//   - turnover.go: how long people keep a slot, from the admissions since the slots were first filled
//
// Admission
//   - monitor.go: the slot monitor, its loop and ticks (sweeps, admissions, series)
//   - openings.go: the drop openings the monitor ticks once more at
//   - mails.go: the mails of being called the monitor sends after its tick (an address never logged)
//   - admitted.go: telling a user they are admitted, its three routes and the once-only send
//
// Admitted users
//   - actions.go: leave and release over WebSocket and HTTP; released admissions
//   - entry.go: entry tokens: verify and the JWKS
//   - arrivals.go: the reporters' arrivals, which keep an admission from being a no-show
//   - holds.go: seat holds for admitted buyers
//
// What clients and operators read
//   - frames.go: the frames and states of the contract
//   - openapi.go: the OpenAPI document (openapi.yaml)
//   - metrics.go: the Prometheus metrics
package gateway

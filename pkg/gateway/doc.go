// Package gateway is ws-gateway: it serves /queue-status/{eventId} over
// WebSocket, pushes each connected user's place and the total on every status
// tick, and runs the slot monitor that admits users with the admit script.
//
// Connections live in a sharded hub. A status tick reads every connected
// user of an event with one pipelined Redis round trip, so round trips grow
// with events, not sockets. Each socket has a bounded send queue and a write
// timeout: a reader too slow to keep up is closed with 1008 and never delays
// the others. The disconnect grace rests on a presence record in Redis that
// every gateway refreshes, so a user who reconnects to any gateway keeps
// their place. A Server is safe for concurrent use.
package gateway

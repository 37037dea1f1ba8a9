// Package queue is waitq's domain: event and user ids and their validation,
// the join/leave message that travels through Kafka and the records of the
// changes the live state makes on its own, the fold of an event's log into
// the live state it describes (Replay, for rebuilds), the signed ticket a
// browser uses to prove who it is and the visitor identity waitq issues
// (visitor.go), event configuration (with its join token policy,
// jointoken.go, its proof-of-work policy, challenge.go, and its page,
// page.go) and the cache that
// spares the store a lookup per join or connect (EventCache), and the error
// codes every service maps to HTTP statuses or close codes.
//
// It speaks neither Redis nor Kafka; the packages that do (redisstore,
// kafkajoin) implement the ports: the small interfaces the services need of
// the live state and the log, all declared in ports.go with their requests
// and replies. Everything in this
// package is safe for concurrent use, except a Replay, which one goroutine
// feeds.
package queue

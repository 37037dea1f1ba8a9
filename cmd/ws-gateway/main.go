// Command ws-gateway serves /queue-status/{eventId} over WebSocket and SSE,
// pushing each user's place and the total every status interval, and runs
// the slot monitor that admits users from the head of each line. Run with -h
// for its settings.
//
// Unless GOGC is set, it runs with a garbage-collection target of
// defaultGCPercent: its heap is almost all long-lived socket state, which
// Go's default target of 100 % would let double in garbage before a
// collection, for little CPU saved (docs/performance.md).
package main

import (
	"os"
	"runtime/debug"

	"github.com/waitq/waitq/internal/app"
)

const defaultGCPercent = 20

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	app.Main(&app.Gateway{})
}

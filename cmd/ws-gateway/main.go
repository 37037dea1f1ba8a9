// Command ws-gateway serves /queue-status/{eventId} over WebSocket, pushing
// each user's place and the total every status interval, and runs the slot
// monitor that admits users from the head of each line. Run with -h for its
// settings.
package main

import "github.com/waitq/waitq/pkg/app"

func main() { app.Main(&app.Gateway{}) }

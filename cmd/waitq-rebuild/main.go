// Command waitq-rebuild rebuilds events' live state in Redis from their
// Kafka logs alone (after Redis lost its data), while the services run.
// Run with -h for its settings; docs/operations.md has the runbook.
package main

import "github.com/waitq/waitq/internal/app"

func main() { app.Main(&app.Rebuild{}) }

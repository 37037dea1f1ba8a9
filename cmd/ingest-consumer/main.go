// Command ingest-consumer is one member of the waitq-ingest consumer group:
// it writes joins and leaves from every event topic into Redis, committing
// only what was written. Run with -h for its settings.
package main

import "github.com/waitq/waitq/internal/app"

func main() { app.Main(&app.Ingest{}) }

// Command producer-api accepts joins and leaves over HTTP, stamps them and
// publishes them to the event's Kafka topic, answering 202 once Kafka
// acknowledged; it also serves the admin API. Run with -h for its settings.
package main

import "github.com/waitq/waitq/internal/app"

func main() { app.Main(&app.Producer{}) }

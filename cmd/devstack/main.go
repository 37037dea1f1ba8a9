// Command devstack runs all of waitq in one process for a newcomer: an
// embedded Kafka-protocol broker and Redis (unless WAITQ_KAFKA_BROKERS and
// WAITQ_REDIS_URL name real ones), every service and a demo event, and
// prints the URLs and the admin token. Run with -h for its settings.
package main

import (
	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/stack"
)

func main() { app.Main(&stack.Devstack{}) }

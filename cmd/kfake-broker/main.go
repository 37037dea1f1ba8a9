// Command kfake-broker runs franz-go's kfake, a Kafka wire-protocol broker,
// as a program of its own: the broker of the container suite and of the dev
// image where no Apache Kafka can be had. Not for production. Run with -h
// for its settings.
package main

import (
	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/stack"
)

func main() { app.Main(&stack.Broker{}) }

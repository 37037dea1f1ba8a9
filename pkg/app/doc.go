// Package app wires waitq's services from their configuration: each service's
// settings (flags and WAITQ_… variables), its dependencies, its HTTP server
// and its graceful shutdown. cmd/* call Main; cmd/devstack and tests call Run
// or a service's Run directly.
package app

// Package app wires waitq's services from their configuration: each service's
// settings (flags and WAITQ_… variables), its dependencies, its HTTP server
// and its graceful shutdown. cmd/* call Main; internal/stack starts
// services in process (for the devstack and the measurements) with
// RunWithEnv, from an environment map, so that every setting they do not
// change keeps the default its program binds (each package's DefaultConfig).
package app

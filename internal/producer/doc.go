// Package producer serves producer-api's HTTP routes with echo: join and
// leave, the public event and its fairness report (fairness.go, cached per
// event), the admin API for events, and (through package httpkit) health,
// readiness, metrics and its OpenAPI document (openapi.yaml). Every error
// leaves through httpkit's one table. A Server is safe for concurrent use.
package producer

// Package api serves producer-api's HTTP routes with echo: join and leave,
// the admin API for events, health, readiness and metrics. Every error leaves
// through one table (errors.go) that maps a domain code to an HTTP status and
// a JSON body. A Server is safe for concurrent use.
package api

// Command waitq-guard is a reverse proxy in front of any web site that lets
// in only the visitors the waiting room admitted: an entry token in the
// waitq_token parameter or the guard's cookie, checked offline with
// ws-gateway's keys. Everyone else is sent to the waiting room. Its own
// routes are under /waitq-guard/ (healthz, readyz, metrics). Run with -h for
// its settings.
package main

import "github.com/waitq/waitq/internal/app"

func main() { app.Main(&app.Guard{}) }

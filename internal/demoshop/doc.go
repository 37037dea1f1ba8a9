// Package demoshop is a tiny web shop to put behind waitq-guard in the
// devstack and in tests: a home page listing three products, a page per
// product (/product/{id}) with an order button, and the "order placed" page
// (GET or POST /order), the natural done path. It serves plain HTML with a
// stylesheet under /static/ and answers /healthz, and greets the user the
// guard names in X-Waitq-User-Id.
//
// A Config gives it a real limit, for the guard's health figures to see: a
// pool of workers, each page holding one for a work time, a page that waits
// too long for one answered 503. Static files and /healthz take no worker.
// The zero Config (Handler) has no limit.
//
// With a gateway (Config.GatewayURL, EventID) the seated ticket's page is a
// seat map (seats.go): the buyer holds a seat through ws-gateway's seat
// holds with the entry token waitq-guard forwards (WAITQ_FORWARD_TOKEN),
// and the order confirms it; the seats' state lives in waitq, not here.
//
// With a presale (Config.JoinToken) a visitor signs in as a demo customer
// (a cookie) and the members' presale link mints a join token for that
// account (pkg/jointoken) and sends the browser to the waiting room page
// with it (members.go).
//
// It keeps no state besides its workers; a Shop is safe for concurrent use.
package demoshop

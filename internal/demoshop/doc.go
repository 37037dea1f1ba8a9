// Package demoshop is a tiny web shop to put behind waitq-gate in the
// devstack and in tests: a home page listing three products, a page per
// product (/product/{id}) with an order button, and the "order placed" page
// (GET or POST /order), the natural done path. It serves plain HTML with a
// stylesheet under /static/ and answers /healthz, and greets the user the
// gate names in X-Waitq-User-Id. It keeps no state; Handler is safe for
// concurrent use.
package demoshop

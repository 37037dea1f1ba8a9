// Package contract checks waitq's HTTP exchanges and live-status frames
// against the OpenAPI 3 documents the services publish (kin-openapi): Load
// validates and lints a document, Handler wraps a service under test so that
// every request it is sent and every answer it gives is checked, and Frame
// checks a WebSocket or SSE frame against the document's Frame schema.
//
// A Doc is safe for concurrent use once loaded.
package contract

// Package guard is waitq-guard: a reverse proxy in front of any web site that
// lets through only the visitors the waiting room admitted. Requests to
// protected paths pass entry.Guard (the entry token from the waitq_token
// parameter or the cookie, checked offline with the gateway's keys) before
// they are forwarded to the origin with net/http/httputil; the others are
// sent to the waiting room. Bypassed paths (static files, the origin's own
// health check) are forwarded without a token.
//
// The guard's own routes live under AdminPrefix (/waitq-guard/healthz,
// /waitq-guard/readyz, /waitq-guard/metrics), a prefix no site is expected to
// use, so that every other path belongs to the origin.
//
// With Config.ForwardAuth the guard also answers AuthPath
// (/waitq-guard/auth), a proxy's forward-auth subrequest (nginx
// auth_request, Caddy forward_auth, Traefik ForwardAuth), for the request
// its forwarded headers describe, believed only from Config.TrustedProxies:
// the same entry.Guard handler decides (auth.go), its 204 standing for the
// origin's answer, so that the done path releases the slot there too. The
// origin is then optional; without it the guard sees no origin answer and
// refuses to report health.
//
// The forwarded request carries the verified user in X-Waitq-User-Id and
// the end of the stay (unix ms) in X-Waitq-Expires; the guard drops those
// headers from what clients send, in every spelling (X_Waitq_User_Id too),
// and drops its cookie and the waitq_token parameter, so the origin never
// sees the token.
//
// The guard measures the origin's answers on guarded paths (a
// HealthRecorder: count, errors, p95 latency over a sliding window) and
// ReportHealth posts them to producer-api as a queue.HealthReport, from
// which the event's admission rate follows the shop's health. An origin
// that does not send its response headers within the origin timeout gets
// the visitor 504; one that does not answer at all, 502.
//
// A Proxy is safe for concurrent use.
package guard

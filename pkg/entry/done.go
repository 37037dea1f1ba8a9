package entry

// The done path: a 2xx answer there ends the visit, clears the cookie and
// releases the slot.

import (
	"context"
	"net/http"
)

// serveDone runs next on the done path and, when it answered 2xx, clears
// the cookie (in that answer) and releases the slot in the background.
func (g *Guard) serveDone(w http.ResponseWriter, r *http.Request, next http.Handler, token string) {
	dw := &doneWriter{ResponseWriter: w, clear: g.clearCookieV}
	next.ServeHTTP(dw, r)
	if dw.status == 0 {
		dw.WriteHeader(http.StatusOK) // what the server sends for a handler that wrote nothing
	}
	if dw.status < 200 || dw.status > 299 {
		return
	}
	ctx := context.WithoutCancel(r.Context())
	g.releases.Go(func() {
		ctx, cancel := context.WithTimeout(ctx, ReleaseTimeout)
		defer cancel()
		if err := g.release(ctx, token); err != nil {
			g.log.Warn("releasing a slot after the done path failed", "event", g.eventID, "err", err)
		}
	})
}

// doneWriter adds the cookie-clearing header to a 2xx answer.
type doneWriter struct {
	http.ResponseWriter
	clear  string
	status int // the final status written, 0 before
}

// WriteHeader implements http.ResponseWriter.
func (d *doneWriter) WriteHeader(code int) {
	if code >= 200 && d.status == 0 {
		d.status = code
		if code <= 299 {
			d.Header().Add("Set-Cookie", d.clear)
		}
	}
	d.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (d *doneWriter) Write(b []byte) (int, error) {
	if d.status == 0 {
		d.WriteHeader(http.StatusOK)
	}
	return d.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (d *doneWriter) Flush() {
	if d.status == 0 {
		d.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(d.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (d *doneWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

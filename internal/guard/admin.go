package guard

// The guard's own routes' answers: readiness and JSON.

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/waitq/waitq/pkg/entry"
)

// readyz answers 200 once the gateway's keys are held, fetching them when
// they are not.
func (g *Proxy) readyz(w http.ResponseWriter, r *http.Request) {
	if err := g.Ready(r.Context()); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "event": g.eventID})
}

// Ready reports whether the guard can check tokens: it holds the gateway's
// keys, or fetches them now.
func (g *Proxy) Ready(ctx context.Context) error {
	if g.keys.Loaded() {
		return nil
	}
	if err := g.keys.Refresh(ctx); err != nil {
		return err
	}
	if !g.keys.Loaded() {
		return entry.ErrKeysUnavailable
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
